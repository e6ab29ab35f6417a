"""Runs a command and samples the peak memory of its process tree (parent and workers)."""

import os
import subprocess
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _tree_memory_kb(root):
  """(PSS, RSS) in KB, each summed over `root` and its descendants."""
  pss = rss = 0
  stack = [root]
  while stack:
    pid = stack.pop()
    try:
      with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
          if line.startswith("Pss:"):
            pss += int(line.split()[1])
          elif line.startswith("Rss:"):
            rss += int(line.split()[1])
      with open(f"/proc/{pid}/task/{pid}/children") as f:
        stack.extend(int(c) for c in f.read().split())
    except OSError:
      continue
  return pss, rss


def measure(cmd):
  """Runs cmd in the repository root; returns (seconds, peak PSS GB, peak RSS GB, stderr).

  Memory is sampled every 50 ms over the process tree: PSS (shared pages split between the
  processes mapping them, so forked workers are not double-counted) and RSS (every process's
  resident pages in full)."""
  start = time.monotonic()
  with tempfile.TemporaryFile("w+") as err:
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, cwd=REPO)
    peak_pss = peak_rss = 0
    while proc.poll() is None:
      pss, rss = _tree_memory_kb(proc.pid)
      peak_pss, peak_rss = max(peak_pss, pss), max(peak_rss, rss)
      time.sleep(0.05)
    seconds = time.monotonic() - start
    err.seek(0)
    text = err.read()
  if proc.returncode:
    raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{text[-3000:]}")
  return seconds, peak_pss * 1024 / 1e9, peak_rss * 1024 / 1e9, text
