"""Atomic file writes: write a temporary file beside the target, then rename it."""

import contextlib
import os
import tempfile


@contextlib.contextmanager
def atomic_output(path, mode="w", encoding="utf-8", newline=None):
  """Opens a temporary file beside `path`; renames it over `path` only if the block succeeds.

  Readers therefore see either the old file or the complete new one, never a
  half-written file; on any exception (Ctrl-C included) the temporary is deleted.
  """
  path = os.fspath(path)
  directory = os.path.dirname(os.path.abspath(path))
  os.makedirs(directory, exist_ok=True)
  fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
  try:
    if "b" in mode:
      f = os.fdopen(fd, mode)
    else:
      f = os.fdopen(fd, mode, encoding=encoding, newline=newline)
    with f:
      yield f
      f.flush()
      os.fsync(f.fileno())
    os.replace(tmp, path)
  except BaseException:
    if os.path.exists(tmp):
      os.unlink(tmp)
    raise


def atomic_write_text(path, text, newline=""):
  """Writes `text` (UTF-8) to `path` so readers never see a half-written file."""
  with atomic_output(path, "w", newline=newline) as f:
    f.write(text)
