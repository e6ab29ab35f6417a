"""Atomic outputs: write under a hidden temporary name beside the target, then rename.

Readers see the old file or the complete new one, never a half-written one;
on any exception (Ctrl-C included, and a full disk, whose error then names the
target) the temporary is deleted. The temporary is `.<name>.tmp-<pid>` in the
target's directory (a rename does not cross file systems), and is created as
any file is, so its mode follows the umask. A target that is a symbolic
link is written where the link points; the link stays. A
process killed mid-write (SIGKILL) cannot delete its temporary: the next
write of the same local target removes those of processes no longer running.

Every temporary is also held in this process's registry (`hold` / `let_go`)
from before it is created until it is renamed or deleted: a signal handler
that ends the process at once (`cli.run`'s, for a script with nothing to
save) calls `remove_held` instead of unwinding through library code. The
registry names only paths this process made (temporaries named by its pid, a
lock it created) and a user's output it moved aside, which `remove_held` puts
back; never a committed output.
"""

import contextlib
import errno
import os
import posixpath
import sys
import tempfile

from absl import logging

from fileio import filesystem
from fileio.outputs import OutputError


def _link_target(path):
  """`path` itself, or where it points if it is a local symbolic link: an output written
  through a link replaces the link's target, and the link stays."""
  path = os.fspath(path).rstrip("/")
  return os.path.realpath(path) if filesystem.is_local(path) and os.path.islink(path) else path


def temporary_path(path, kind="tmp"):
  """The hidden name `.<name>.<kind>-<pid>` beside `path`."""
  head, name = posixpath.split(os.fspath(path).rstrip("/"))
  return posixpath.join(head, f".{name}.{kind}-{os.getpid()}")


def name_output(error, path, kind="tmp"):
  """Names `path` in `error` if it is an OSError naming no file (Python's failed writes name
  none) or `path`'s temporary of `kind`, so that the error names the output the user asked
  for."""
  if isinstance(error, OSError) and error.filename in (None, temporary_path(path, kind)):
    error.filename = path


def tensorflow_full_disk(error, path):
  """TensorFlow's error for a full disk or quota (a ResourceExhaustedError whose message
  holds the system's text) as the OSError ENOSPC / EDQUOT naming `path`; None for any other."""
  tf = sys.modules.get("tensorflow")  # a TensorFlow error means TensorFlow is imported
  if tf is None or not isinstance(error, tf.errors.ResourceExhaustedError):
    return None
  for code in (errno.ENOSPC, errno.EDQUOT):
    if os.strerror(code) in error.message:
      return OSError(code, os.strerror(code), path)
  return None


# {path this process made and deletes when done: None, or a user's output moved aside to
# path: the target it is put back to}; see `remove_held`.
_HELD = {}


def hold(path, moved_from=None):
  """Registers `path` (a temporary, a lock) for `remove_held` to delete, or, with
  `moved_from`, a user's output moved aside to `path` for it to put back."""
  _HELD[path] = moved_from


def let_go(path):
  """Unregisters `path`: committed (renamed away), deleted, or no longer to be put back."""
  _HELD.pop(path, None)


def _delete_held(path):
  filesystem.delete(path)
  let_go(path)


def remove_held():
  """Deletes what `hold` registered and puts a moved-aside output back where it was (unless
  its replacement is in place already): what a signal handler that ends the process at once
  calls. Runs between two bytecodes of the main thread, so a rename is whole or not begun."""
  for path, moved_from in list(_HELD.items()):
    if moved_from is not None and filesystem.exists(path) and not filesystem.exists(moved_from):
      filesystem.rename(path, moved_from)
    else:
      filesystem.delete(path)
  _HELD.clear()


def process_is_running(pid):
  """Whether a process `pid` runs on this host (another user's included)."""
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:
    return True
  return True


def remove_stale_temporaries(path):
  """Deletes the temporaries and staging directories of `path` (local) left by processes that
  no longer run."""
  if not filesystem.is_local(path):
    return
  head, name = posixpath.split(os.fspath(path).rstrip("/"))
  try:
    entries = os.listdir(head or ".")
  except FileNotFoundError:
    return
  for entry in entries:
    prefix = next((p for p in (f".{name}.tmp-", f".{name}.staging-") if entry.startswith(p)),
                  None)
    pid = entry[len(prefix):] if prefix else ""
    if pid.isdigit() and not process_is_running(int(pid)):
      logging.warning("Removing %s, left by process %s, which no longer runs",
                      posixpath.join(head, entry), pid)
      filesystem.delete(posixpath.join(head, entry))


class AtomicFile:
  """An output file open under `temporary_path(path)` until `commit()` renames it to `path`.

  `abort()` closes and deletes it instead. Use `atomic_output` unless several
  files must be committed together.
  """

  def __init__(self, path, mode="w", overwrite=True):
    """`mode`: "w" (UTF-8 text, "\\n" line ends) or "wb"; the parent directory is created.

    overwrite: False for an output the user did not allow to be replaced: if
    another run wrote `path` meanwhile, `commit()` keeps it (`rename_new`).
    """
    self.path = _link_target(path)
    self.overwrite = overwrite
    self.temp_path = temporary_path(self.path)
    parent = posixpath.dirname(self.path)
    if parent:
      filesystem.makedirs(parent)
    remove_stale_temporaries(self.path)
    hold(self.temp_path)
    try:
      self.file = filesystem.open_file(self.temp_path, mode)
    except BaseException as e:  # Ctrl-C can land just after the file is created
      _delete_held(self.temp_path)
      name_output(e, self.path)
      raise

  def commit(self):
    try:
      filesystem.sync_and_close(self.file, self.temp_path)
      (filesystem.rename if self.overwrite else rename_new)(self.temp_path, self.path)
    except BaseException as e:
      name_output(e, self.path)
      self.abort()
      raise
    let_go(self.temp_path)  # after the rename: deleting the renamed temporary is a no-op

  def abort(self):
    """Closes and deletes the temporary, also when closing fails (a full disk)."""
    try:
      self.file.close()
    except Exception:  # pylint: disable=broad-except  (discarded: only its deletion matters)
      pass
    _delete_held(self.temp_path)


@contextlib.contextmanager
def atomic_output(path, mode="w", overwrite=True):
  """Yields a file (mode "w": UTF-8 text, or "wb") replacing `path` if the block succeeds
  (see `AtomicFile` for `overwrite`)."""
  output = AtomicFile(path, mode, overwrite)
  try:
    yield output.file
  except BaseException as e:
    name_output(e, output.path)
    output.abort()
    raise
  output.commit()


def atomic_write_text(path, text, overwrite=True):
  """Writes `text` (UTF-8) to `path` so that readers never see a half-written file (see
  `AtomicFile` for `overwrite`)."""
  with atomic_output(path, "w", overwrite) as f:
    f.write(text)


def _new_directory_beside(path, kind):
  """Creates the empty directory `temporary_path(path, kind)`, once the stale temporaries of
  `path` are removed; returns its path."""
  temp = temporary_path(path, kind)
  filesystem.delete(temp)  # left by a crashed process that had our pid
  remove_stale_temporaries(path)
  hold(temp)
  try:
    filesystem.makedirs(temp)
  except BaseException as e:  # Ctrl-C can land just after the directory is made
    _delete_held(temp)
    name_output(e, path, kind)
    raise
  return temp


@contextlib.contextmanager
def atomic_directory(path, overwrite=True):
  """Yields a new empty directory beside `path` that replaces `path` only if the block succeeds.

  On any exception the new directory is deleted and `path` is left as it was; a full
  disk met by TensorFlow's writers (a SavedModel's) becomes OSError ENOSPC naming `path`.
  overwrite: False for an export the user did not allow to replace a
  SavedModel: if another run filled `path` meanwhile, it is kept (`rename_new`).
  Readers see the old directory or the new one (or, for an instant, none),
  never a partial one. On object stores (gs://) a directory rename copies its
  files, so there it is not atomic; TensorFlow's ram:// does not move them at all.
  """
  path = _link_target(path)
  temp = _new_directory_beside(path, "tmp")
  try:
    yield temp
    if overwrite:
      replace_directory(temp, path)
    else:
      rename_new(temp, path)
  except BaseException as e:
    _delete_held(temp)
    full_disk = tensorflow_full_disk(e, path)
    if full_disk:
      raise full_disk from None
    raise
  let_go(temp)  # after the rename, as AtomicFile.commit


@contextlib.contextmanager
def staging_directory(path):
  """Yields an empty scratch directory for what an export to `path` copies in (its assets),
  deleted on exit. For a local `path` it is `.<name>.staging-<pid>` beside it, so that one
  left by a killed process is removed by the next write of `path` (none is left in $TMPDIR);
  elsewhere (gs://) a local temporary directory."""
  path = _link_target(path)
  if filesystem.is_local(path):
    staging = _new_directory_beside(path, "staging")
  else:
    staging = tempfile.mkdtemp()
    hold(staging)
  try:
    yield staging
  finally:
    _delete_held(staging)


def rename_new(source, target):
  """Renames file or directory `source` to `target`, which must not exist (or, for a
  directory, be empty): else OutputError, as another run wrote the same output meanwhile, and
  `source` is left to its caller. Locally the test and the rename are one step (a hard link
  for a file, a rename for a directory)."""
  try:
    if not filesystem.is_local(target):
      if filesystem.exists(target) and not (filesystem.isdir(source) and
                                            filesystem.isdir(target) and
                                            not filesystem.listdir(target)):
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), target)
      filesystem.rename(source, target)
    elif os.path.isdir(source):
      os.rename(source, target)  # replaces an empty directory only
    else:
      try:
        os.link(source, target)
      except OSError as e:  # a file system without hard links: test, then rename
        if e.errno not in (errno.EPERM, errno.EOPNOTSUPP) or os.path.lexists(target):
          raise
        os.rename(source, target)
      else:
        os.remove(source)
  except OSError as e:
    if e.errno in (errno.EEXIST, errno.ENOTEMPTY) or (e.errno == errno.ENOTDIR and
                                                       os.path.lexists(target)):
      raise OutputError(f"output {target!r} was written by another run while this one ran: "
                        "kept it, and discarded this run's output") from None
    raise


def replace_directory(source, target):
  """Moves directory `source` to `target`, replacing an existing `target`.

  The old `target` is moved aside first and deleted only once `source` is in
  place; if that move fails, it is put back.
  """
  old = temporary_path(target, "old")
  filesystem.delete(old)
  had_target = filesystem.exists(target)
  if had_target:
    hold(old, moved_from=target)  # from here to the end, `remove_held` puts it back
    filesystem.rename(target, old)
  try:
    filesystem.rename(source, target)
  except BaseException:
    if had_target:
      filesystem.rename(old, target)
      let_go(old)
    raise
  _delete_held(old)
