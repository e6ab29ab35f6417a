"""Inputs: comma-separated file patterns, as Google's scripts take them, UTF-8 text lines, and
InputError."""

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


def utf8_lines(path, error=InputError):
  """Yields (line number from 1, line with its line end) of text file `path`.

  Raises `error` (a UserError class) naming the file and the line at the first line that is
  not valid UTF-8.
  """
  with filesystem.open_file(path, "rb") as f:
    for line_no, raw in enumerate(f, start=1):
      try:
        line = raw.decode("utf-8")
      except UnicodeDecodeError as e:
        raise error(
            f"{path}:{line_no}: not valid UTF-8 ({e.reason} at byte {e.start})") from None
      yield line_no, line
