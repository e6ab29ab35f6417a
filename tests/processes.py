"""Helpers for tests that run training in real subprocesses."""

import signal
import socket
import time


def free_port():
  """A localhost TCP port that is free now (for a TF_CONFIG cluster)."""
  with socket.socket() as s:
    s.bind(("localhost", 0))
    return s.getsockname()[1]


def sigkill_after_first_checkpoint(process, output_dir, timeout):
  """Waits for `output_dir/checkpoint`, then SIGKILLs `process`: a real kill, no clean-up."""
  try:
    deadline = time.time() + timeout
    while not (output_dir / "checkpoint").exists():
      assert process.poll() is None, "the run ended before its first save"
      assert time.time() < deadline, "no checkpoint in time"
      time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
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
