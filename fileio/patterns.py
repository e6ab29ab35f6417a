"""Comma-separated input file patterns, as Google's scripts take them."""

import glob
import os


class InputError(ValueError):
  """Input that cannot be used as given: the message names the file/line/flag."""


def resolve_input_files(patterns):
  """Comma-separated files or globs -> existing files, in order (each glob sorted)."""
  files = []
  for pattern in (p.strip() for p in patterns.split(",")):
    if not pattern:
      continue
    if glob.has_magic(pattern):
      matches = sorted(glob.glob(pattern))
      if not matches:
        raise InputError(f"--input_file pattern {pattern!r} matches no file")
    else:
      matches = [pattern]
    for path in matches:
      if not os.path.isfile(path):
        raise InputError(f"input file not found: {path!r}")
      files.append(path)
  if not files:
    raise InputError("--input_file names no file")
  return files
