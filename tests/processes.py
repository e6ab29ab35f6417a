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
