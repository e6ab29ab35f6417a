"""Runs a command and samples the peak memory of its process tree (parent and workers)."""

import dataclasses
import os
import resource
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


@dataclasses.dataclass
class Measured:
  """One run of a command: wall and CPU seconds, peak memory (GB) and its stderr."""
  seconds: float
  cpu_seconds: float  # user + system of the whole process tree (waited-for descendants)
  peak_pss: float
  peak_rss: float
  stderr: str
  rss_trace: list  # (seconds since start, tree RSS in GB), one sample per second


def _children_cpu():
  usage = resource.getrusage(resource.RUSAGE_CHILDREN)
  return usage.ru_utime + usage.ru_stime


def measure(cmd, env=None):
  """Runs cmd in the repository root; returns its Measured figures.

  Memory is sampled every 50 ms over the process tree: PSS (shared pages split between the
  processes mapping them, so forked workers are not double-counted) and RSS (every process's
  resident pages in full). CPU time is what the tree used, so it counts what other jobs on the
  machine do not: compare it where the load varies."""
  start, cpu_before = time.monotonic(), _children_cpu()
  with tempfile.TemporaryFile("w+") as err:
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, cwd=REPO, env=env)
    peak_pss = peak_rss = 0
    trace, next_trace = [], 0.0
    while proc.poll() is None:
      pss, rss = _tree_memory_kb(proc.pid)
      peak_pss, peak_rss = max(peak_pss, pss), max(peak_rss, rss)
      now = time.monotonic() - start
      if now >= next_trace:
        trace.append((now, rss * 1024 / 1e9))
        next_trace = now + 1.0
      time.sleep(0.05)
    seconds = time.monotonic() - start
    err.seek(0)
    text = err.read()
  if proc.returncode:
    raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{text[-3000:]}")
  return Measured(seconds, _children_cpu() - cpu_before, peak_pss * 1024 / 1e9,
                  peak_rss * 1024 / 1e9, text, trace)
