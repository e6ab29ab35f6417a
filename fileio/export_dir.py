"""The rules for a SavedModel directory that a script replaces (--export_dir).

An export replaces export_dir whole (`atomic_directory`), so each exporting
script checks the flag before any work: the directory may be new, empty, or
(with --overwrite_export) a SavedModel that the script itself wrote, known by
its marker files; it may never be, contain or lie inside output_dir.
"""

import errno
import os

from cli import FlagError
from fileio import filesystem

# What every SavedModel holds; each export names marker files of its own.
_SAVED_MODEL_FILES = ("saved_model.pb", "variables")


def check_export_dir(export_dir, output_dir, overwrite, markers, script, flag="--export_dir"):
  """Refuses, before any work, an export_dir whose replacement would delete what the user owns.

  Args:
    export_dir, output_dir: the flags' paths (local or TensorFlow file-system
      URLs); output_dir None for a script that has none.
    overwrite: --overwrite_export.
    markers: paths relative to export_dir that, beside saved_model.pb and
      variables/, mark a SavedModel written by `script`.
    script: the exporting script's name, for the message.
    flag: the export directory's flag, for the message.

  Raises:
    FlagError naming the directory; an OSError (as `_check_can_be_made`'s) for a new
    export_dir that cannot be made.
  """
  def resolved(path):
    return os.path.realpath(path) if filesystem.is_local(path) else path.rstrip("/")
  if output_dir is not None:
    export, output = resolved(os.fspath(export_dir)), resolved(os.fspath(output_dir))
    if export == output or export.startswith(output + "/") or output.startswith(export + "/"):
      raise FlagError(f"{flag} {export_dir!r} overlaps --output_dir {output_dir!r}: "
                      "writing the export would delete the run's checkpoints and results")
  if not filesystem.exists(export_dir):
    _check_can_be_made(os.fspath(export_dir))
    return
  if not filesystem.isdir(export_dir):
    raise FlagError(f"{flag} {export_dir!r} is a file, not a directory")
  if not filesystem.listdir(export_dir):
    return
  if not all(filesystem.exists(os.path.join(export_dir, marker))
             for marker in _SAVED_MODEL_FILES + tuple(markers)):
    raise FlagError(f"{flag} {export_dir!r} exists and is not a SavedModel written by "
                    f"{script}: nothing was touched; choose a new or empty directory")
  if not overwrite:
    raise FlagError(f"{flag} {export_dir!r} holds a SavedModel: pass --overwrite_export "
                    "to replace it")


def _check_can_be_made(path):
  """Raises the OSError that making the new local directory `path` would meet at the end of
  the work: NotADirectoryError naming the file that is its nearest existing ancestor, or
  EROFS naming `path` when that ancestor is on a read-only file system."""
  if not filesystem.is_local(path):
    return
  parent = os.path.dirname(path)
  while parent and not os.path.exists(parent):
    parent = os.path.dirname(parent)
  if parent and not os.path.isdir(parent):
    raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), parent)
  if os.statvfs(parent or ".").f_flag & os.ST_RDONLY:
    raise OSError(errno.EROFS, os.strerror(errno.EROFS), path)
