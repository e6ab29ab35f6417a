"""Tests that run subprocesses: a fresh Python, a free port, a kill after the first
checkpoint, waiting for every process of a cluster."""

import os
import signal
import socket
import subprocess
import sys
import time


def run_python(code):
  """Runs `code` in a fresh Python; asserts it exits 0; returns its stdout."""
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"), check=False)
  assert out.returncode == 0, out.stderr[-3000:]
  return out.stdout


def free_port():
  """A localhost TCP port that is free now (for a TF_CONFIG cluster)."""
  with socket.socket() as s:
    s.bind(("localhost", 0))
    return s.getsockname()[1]


def signal_after_first_checkpoint(process, output_dir, timeout, signum=signal.SIGKILL):
  """Waits for `output_dir/checkpoint`, then sends `signum` (default: a real kill, no clean-up).

  Returns what the process wrote to its pipes ((None, None) for those not piped).
  """
  try:
    deadline = time.time() + timeout
    while not (output_dir / "checkpoint").exists():
      assert process.poll() is None, "the run ended before its first save"
      assert time.time() < deadline, "no checkpoint in time"
      time.sleep(0.01)
    process.send_signal(signum)
    return process.communicate(timeout=timeout)
  finally:
    process.kill()
    process.wait()


def wait_for_success(processes, timeout):
  """Waits for every process (stderr piped as text); asserts each exited 0; returns the logs.

  Processes still running at the timeout, or after a failure, are killed.
  """
  try:
    logs = [p.communicate(timeout=timeout)[1] for p in processes]
  finally:
    for p in processes:
      p.kill()
      p.wait()
  for p, log in zip(processes, logs):
    assert p.returncode == 0, log[-5000:]
  return logs
