"""One run per output_dir: a lock file that stops a second process training into it.

Two runs on one output_dir would write the same checkpoint names over each
other. The chief creates `output_dir/.run.lock` (holding its pid and host)
with an exclusive create and removes it when the run ends. A lock left by a
process that no longer runs (killed) is taken over with a warning; one held
by a live process is an error naming it. Only local directories are locked:
object stores such as gs:// have no exclusive create.
"""

import os
import socket

from absl import logging

from cli import FlagError
from fileio.atomic import hold, let_go, process_is_running
from fileio.filesystem import is_local

LOCK_NAME = ".run.lock"


class OutputDirInUseError(FlagError):
  """Another live process is running in the same --output_dir."""


class OutputDirLock:
  """Holds `output_dir`'s lock from construction to `release()` (re-entrant in one process)."""

  def __init__(self, output_dir):
    self.path = os.path.join(output_dir, LOCK_NAME) if is_local(output_dir) else None
    self._owned = False
    if self.path:
      self._acquire()

  def _acquire(self):
    me = (os.getpid(), socket.gethostname())
    while True:
      try:
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
      except FileExistsError:
        holder = self._holder()
        if holder == me:
          return  # an earlier Runner of this process holds it
        if holder is None or holder[1] != me[1] or process_is_running(holder[0]):
          who = (f"process {holder[0]} on {holder[1]}" if holder else
                 "another process (the lock file names none: delete it if no run is going on)")
          raise OutputDirInUseError(
              f"--output_dir {os.path.dirname(self.path)} is in use by {who} (lock file "
              f"{self.path}): wait for it to end or use another output_dir") from None
        logging.warning("Taking over %s from process %d, which no longer runs", self.path,
                        holder[0])
        os.remove(self.path)
        continue
      hold(self.path)  # ours from here: deleted if a signal ends the process at once
      with os.fdopen(fd, "w") as f:
        f.write(f"{me[0]} {me[1]}\n")
      self._owned = True
      return

  def _holder(self):
    """(pid, host) written in the lock file, or None if it cannot be read (being written)."""
    try:
      with open(self.path, encoding="utf-8") as f:
        pid, host = f.read().split()
      return int(pid), host
    except (OSError, ValueError):
      return None

  def release(self):
    """Removes the lock file if this object created it."""
    if self._owned:
      self._owned = False
      let_go(self.path)  # first: once removed, the path may be another run's lock
      try:
        os.remove(self.path)
      except FileNotFoundError:
        pass
