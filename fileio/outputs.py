"""The one check of output files, run before any work: nothing a user owns is replaced unasked,
and an input is never replaced."""

import os

from cli import UserError

from fileio import filesystem


class OutputError(UserError, ValueError):
  """Output paths that cannot be written as asked."""


def _same_file_key(path):
  """What two paths naming one file share: the resolved path (links followed) if local."""
  return os.path.realpath(path) if filesystem.is_local(path) else path


def check_outputs(paths, overwrite, inputs=None):
  """Raises OutputError if an output exists (without `overwrite`), is one of the inputs (even
  with `overwrite`), is a directory, has no directory to go in, or is named twice.

  inputs: {what the user gave them with (a flag, "--vocab_file"): a path or a list of paths};
  a None path is left out.
  """
  if len(set(map(_same_file_key, paths))) != len(paths):
    raise OutputError(f"--output_file names the same file twice: {','.join(paths)}")
  given = {}
  for what, files in (inputs or {}).items():
    for path in files if isinstance(files, (list, tuple)) else [files]:
      if path:
        given.setdefault(_same_file_key(path), what)
  for path in paths:
    what = given.get(_same_file_key(path))
    if what:
      raise OutputError(f"output file {path!r} is also an input ({what}): it would be replaced; "
                        "write the output elsewhere")
    if filesystem.isdir(path):
      raise OutputError(f"output path is a directory: {path!r}")
    if filesystem.exists(path) and not overwrite:
      raise OutputError(f"output file exists: {path!r} (pass --overwrite to replace it)")
    parent = os.path.dirname(path) or "."
    if not filesystem.isdir(parent):
      raise OutputError(f"output directory does not exist: {parent!r}")
