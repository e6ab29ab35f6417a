"""Path operations for local files and for TensorFlow's file systems (gs://, ram://, ...).

A path with a scheme goes through `tf.io.gfile`, imported on first use; a
local path goes through `os`, so that programs touching only local files
(create_pretraining_data and its workers, `tokenization`) never import
TensorFlow, which costs them seconds of start-up. Text is written as UTF-8
without newline translation on both kinds of path, as GFile writes it.
"""

import errno
import glob as globlib
import json
import os
import shutil


def is_local(path):
  """Whether `path` is a local path rather than a URL such as gs://bucket/file."""
  return "://" not in os.fspath(path)


def _gfile():
  import tensorflow as tf  # pylint: disable=import-outside-toplevel  (see the docstring)
  return tf.io.gfile


def glob(pattern):
  """The paths matching `pattern`, sorted."""
  if is_local(pattern):
    return sorted(globlib.glob(pattern))
  return sorted(_gfile().glob(pattern))


def exists(path):
  return os.path.exists(path) if is_local(path) else _gfile().exists(path)


def isdir(path):
  return os.path.isdir(path) if is_local(path) else _gfile().isdir(path)


def isfile(path):
  return os.path.isfile(path) if is_local(path) else (_gfile().exists(path) and
                                                      not _gfile().isdir(path))


def missing_file(path):
  """Why `path` cannot be read as a file ("not found", "a directory, not a file"), else None."""
  if isdir(path):
    return "a directory, not a file"
  return None if exists(path) else "not found"


def read_json(path, error, what="file"):
  """The parsed JSON of file `path`; a missing file or bad JSON/UTF-8 raises `error` naming it."""
  problem = missing_file(path)
  if problem:
    raise error(f"{what} {path}: {problem}")
  try:
    with open_file(path, "rb") as f:
      return json.load(f)
  except ValueError as e:  # bad JSON or bad UTF-8
    raise error(f"{path}: not valid JSON ({e})") from None


def listdir(path):
  """The names of the entries of directory `path` (hidden ones included), sorted."""
  return sorted(os.listdir(path) if is_local(path) else _gfile().listdir(path))


def file_size(path):
  """Size of the file `path` in bytes."""
  return os.path.getsize(path) if is_local(path) else _gfile().stat(path).length


def makedirs(path):
  """Creates directory `path` and its parents; no error if it exists. Locally, a file in
  the way is NotADirectoryError naming that file."""
  if is_local(path):
    try:
      os.makedirs(path, exist_ok=True)
    except FileExistsError as e:  # a file where a folder should be
      raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), e.filename) from None
  else:
    _gfile().makedirs(path)


def open_file(path, mode):
  """Opens `path` in mode "rb", "wb" or "w" (UTF-8 text, no newline translation)."""
  if mode not in ("rb", "wb", "w"):
    raise ValueError(f"unsupported mode {mode!r}: use 'rb', 'wb' or 'w'")
  if not is_local(path):
    return _gfile().GFile(path, mode)
  if mode == "w":
    return open(path, mode, encoding="utf-8", newline="")  # pylint: disable=consider-using-with
  return open(path, mode)  # pylint: disable=consider-using-with


def sync_and_close(f, path):
  """Closes `f` (open for writing `path`) after flushing it to disk where that is possible."""
  f.flush()
  if is_local(path):
    os.fsync(f.fileno())
  f.close()


def rename(source, target):
  """Renames file or directory `source` to `target`, replacing a `target` file."""
  if is_local(source):
    os.replace(source, target)
  else:
    _gfile().rename(source, target, overwrite=True)


def delete(path):
  """Deletes file or directory `path` with all it holds; nothing if it does not exist."""
  if not exists(path):
    return
  if not is_local(path):
    gfile = _gfile()
    (gfile.rmtree if gfile.isdir(path) else gfile.remove)(path)
  elif os.path.isdir(path):
    shutil.rmtree(path)
  else:
    os.remove(path)
