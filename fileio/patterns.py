"""Comma-separated input file patterns, as Google's scripts take them, and InputError."""

import glob as globlib

from cli import UserError

from fileio import filesystem


class InputError(UserError, ValueError):
  """Input that cannot be used as given: the message names the file/line/flag."""


def resolve_input_files(patterns, flag="input_file"):
  """Comma-separated files or globs (local, gs://, ...) -> files, in order, each glob sorted.

  Raises InputError, naming `flag` and the path, for a glob that matches
  nothing, a missing file, a directory, or a list that names no file.
  """
  files = []
  for pattern in (p.strip() for p in patterns.split(",")):
    if not pattern:
      continue
    if globlib.has_magic(pattern):
      matches = filesystem.glob(pattern)
      if not matches:
        raise InputError(f"--{flag} pattern {pattern!r} matches no file")
    else:
      matches = [pattern]
    for path in matches:
      problem = filesystem.missing_file(path)
      if problem:
        raise InputError(f"--{flag} names {path!r}: " +
                         ("input file not found" if problem == "not found" else f"it is {problem}"))
      files.append(path)
  if not files:
    raise InputError(f"--{flag} names no file")
  return files
