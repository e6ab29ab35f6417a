"""Atomic file writes: write a temporary file beside the target, then rename it."""

import os
import tempfile


def atomic_write_text(path, text):
  """Writes `text` (UTF-8) to `path` so readers never see a half-written file."""
  path = os.fspath(path)
  directory = os.path.dirname(os.path.abspath(path))
  os.makedirs(directory, exist_ok=True)
  fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".",
                             suffix=".tmp")
  try:
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
      f.write(text)
    os.replace(tmp, path)
  except BaseException:
    if os.path.exists(tmp):
      os.unlink(tmp)
    raise
