"""training.output_lock: one live run per output_dir; stale locks of dead processes taken over."""

import os
import socket
import subprocess
import sys

from absl.testing import absltest
import pytest

from training import output_lock


def _write_lock(directory, pid, host=None):
  path = directory / output_lock.LOCK_NAME
  path.write_text(f"{pid} {host or socket.gethostname()}\n", encoding="utf-8")
  return path


def test_a_live_holder_stops_a_second_run(tmp_path):
  holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
  try:
    path = _write_lock(tmp_path, holder.pid)
    with pytest.raises(output_lock.OutputDirInUseError,
                       match=rf"--output_dir {tmp_path} is in use by process {holder.pid} on "
                             rf"{socket.gethostname()} \(lock file {path}\): wait for it to end"):
      output_lock.OutputDirLock(str(tmp_path))
    assert path.read_text(encoding="utf-8").split()[0] == str(holder.pid)  # left as it was
  finally:
    holder.kill()
    holder.wait()


def test_a_dead_holders_lock_is_taken_over_and_released(tmp_path):
  dead = subprocess.Popen([sys.executable, "-c", "pass"])
  dead.wait()
  path = _write_lock(tmp_path, dead.pid)
  with absltest.mock.patch.object(output_lock.logging, "warning") as warning:
    lock = output_lock.OutputDirLock(str(tmp_path))
  assert warning.call_args.args[1:] == (str(path), dead.pid)
  assert path.read_text(encoding="utf-8") == f"{os.getpid()} {socket.gethostname()}\n"
  again = output_lock.OutputDirLock(str(tmp_path))  # re-entrant within one process
  again.release()
  assert path.exists()  # only the lock's creator removes it
  lock.release()
  assert not path.exists()


def test_a_holder_on_another_host_or_an_unreadable_lock_is_not_taken_over(tmp_path):
  path = _write_lock(tmp_path, 1, host="elsewhere")
  with pytest.raises(output_lock.OutputDirInUseError, match="in use by process 1 on elsewhere"):
    output_lock.OutputDirLock(str(tmp_path))
  path.write_text("", encoding="utf-8")
  with pytest.raises(output_lock.OutputDirInUseError,
                     match="another process .*delete it if no run is going on"):
    output_lock.OutputDirLock(str(tmp_path))


def test_urls_are_not_locked():
  lock = output_lock.OutputDirLock("ram://lock_test/out")
  assert lock.path is None
  lock.release()
