"""A full disk, for monkeypatching fileio's file opener."""

import errno
import io
import os


class FullDiskFile(io.FileIO):
  """A local file on a full disk: a write that reaches it (a flush) fails with ENOSPC."""

  def write(self, b):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def open_on_full_disk(path, mode):
  """`fileio.filesystem.open_file` ("w" or "wb") on a full disk, for monkeypatching."""
  raw = io.BufferedWriter(FullDiskFile(path, "w"))
  return io.TextIOWrapper(raw, encoding="utf-8", newline="") if mode == "w" else raw
