"""fileio: input patterns and lines, output checks, atomic files and directories, TFRecord framing;
local and ram://."""

import errno
import itertools
import os
import stat
import subprocess
import sys

import pytest
import tensorflow as tf

import fileio
from fileio import InputError, atomic_directory, atomic_output, atomic_write_text, filesystem
from tests.full_disk import open_on_full_disk
from tests.paths import REPO

_ram_dirs = itertools.count()


@pytest.fixture(params=["local", "ram"])
def root(request, tmp_path):
  """An empty directory: a local one, or one in TensorFlow's in-memory file system."""
  if request.param == "local":
    yield str(tmp_path)
    return
  path = f"ram://fileio_test/{next(_ram_dirs)}"
  tf.io.gfile.makedirs(path)
  yield path
  tf.io.gfile.rmtree(path)


def _write(path, text):
  with tf.io.gfile.GFile(path, "w") as f:
    f.write(text)


def _read(path):
  with tf.io.gfile.GFile(path, "rb") as f:
    return f.read().decode("utf-8")


def test_files_and_globs_in_order(root):
  for name in ("b.txt", "a.txt", "c.dat", "z.txt"):
    _write(f"{root}/{name}", name)
  assert fileio.resolve_input_files(f"{root}/z.txt, {root}/*.txt,{root}/c.dat,") == [
      f"{root}/z.txt", f"{root}/a.txt", f"{root}/b.txt", f"{root}/z.txt", f"{root}/c.dat"]


def test_bad_patterns_name_the_flag_and_the_path(root):
  tf.io.gfile.makedirs(f"{root}/sub")
  _write(f"{root}/a.txt", "a")
  with pytest.raises(InputError, match=r"--input_file pattern '.*/\*\.nothing' matches no file"):
    fileio.resolve_input_files(f"{root}/a.txt,{root}/*.nothing")
  with pytest.raises(InputError, match=r"--train_file names '.*/missing.txt': input file not"):
    fileio.resolve_input_files(f"{root}/missing.txt", flag="train_file")
  with pytest.raises(InputError, match=r"names '.*/sub': it is a directory, not a file"):
    fileio.resolve_input_files(f"{root}/sub")
  with pytest.raises(InputError, match=r"names '.*/sub': it is a directory"):
    fileio.resolve_input_files(f"{root}/*")  # a glob that matches a directory too
  for empty in ("", " , ,"):
    with pytest.raises(InputError, match="--input_file names no file"):
      fileio.resolve_input_files(empty)
  assert issubclass(InputError, ValueError)


def test_utf8_lines_name_the_file_and_the_line(root):
  with tf.io.gfile.GFile(f"{root}/a.txt", "wb") as f:
    f.write("é\nfine\n".encode() + b"Caf\xe9\n")
  lines = fileio.utf8_lines(f"{root}/a.txt")
  assert [next(lines), next(lines)] == [(1, "é\n"), (2, "fine\n")]
  with pytest.raises(InputError, match=r"/a\.txt:3: not valid UTF-8 \(invalid continuation "
                                       r"byte at byte 3\)"):
    next(lines)


def test_check_outputs_keeps_what_the_user_owns(root):
  for name in ("mine.txt", "corpus.txt", "vocab.txt"):
    _write(f"{root}/{name}", name)
  tf.io.gfile.makedirs(f"{root}/sub")
  inputs = {"--input_file": [f"{root}/corpus.txt"], "--vocab_file": f"{root}/vocab.txt",
            "--na_prob_file": None}
  fileio.check_outputs([f"{root}/new.txt"], False, inputs)
  fileio.check_outputs([f"{root}/mine.txt"], True, inputs)
  for paths, overwrite, message in (
      ([f"{root}/mine.txt"], False, r"output file exists: '.*/mine\.txt' \(pass --overwrite"),
      ([f"{root}/corpus.txt"], True, r"'.*/corpus\.txt' is also an input \(--input_file\)"),
      ([f"{root}/sub/../vocab.txt"] if root.startswith("/") else [f"{root}/vocab.txt"], True,
       r"is also an input \(--vocab_file\): it would be replaced"),
      ([f"{root}/sub"], True, r"output path is a directory: '.*/sub'"),
      ([f"{root}/no/out.txt"], True, r"output directory does not exist: '.*/no'"),
      ([f"{root}/a.txt", f"{root}/a.txt"], True, r"names the same file twice")):
    with pytest.raises(fileio.OutputError, match=message):
      fileio.check_outputs(paths, overwrite, inputs)
  assert [_read(f"{root}/{name}") for name in ("mine.txt", "corpus.txt", "vocab.txt")] == [
      "mine.txt", "corpus.txt", "vocab.txt"]


def test_atomic_output_replaces_only_on_success(root):
  path = f"{root}/out.txt"
  atomic_write_text(path, "old\n")
  with atomic_output(path) as f:
    f.write("new\r\nüñï\n")  # UTF-8, line ends written as given
    assert _read(path) == "old\n"  # readers see the old file until the end
    assert sorted(tf.io.gfile.listdir(root)) == [f".out.txt.tmp-{os.getpid()}", "out.txt"]
  assert _read(path) == "new\r\nüñï\n"
  for error in (RuntimeError("boom"), KeyboardInterrupt()):
    with pytest.raises(type(error)):
      with atomic_output(path, "wb") as f:
        f.write(b"partial")
        raise error
    assert _read(path) == "new\r\nüñï\n"
    assert tf.io.gfile.listdir(root) == ["out.txt"]


@pytest.mark.parametrize("size", [10, 100_000])
def test_a_full_disk_leaves_no_temporary_and_names_the_output(tmp_path, monkeypatch, size):
  """Failing in a write (100 KB: beyond the buffer) or in the flush of commit (10 bytes)."""
  path = tmp_path / "out.txt"
  atomic_write_text(path, "old\n")
  monkeypatch.setattr(filesystem, "open_file", open_on_full_disk)
  with pytest.raises(OSError) as raised:
    with atomic_output(path) as f:
      f.write("x" * size)
  assert (raised.value.errno, raised.value.filename) == (errno.ENOSPC, str(path))
  assert os.listdir(tmp_path) == ["out.txt"] and path.read_text() == "old\n"


def test_atomic_output_creates_the_parent_directory(root):
  atomic_write_text(f"{root}/new/dir/out.txt", "x")
  assert _read(f"{root}/new/dir/out.txt") == "x"
  assert tf.io.gfile.listdir(f"{root}/new/dir") == ["out.txt"]


@pytest.mark.parametrize("umask,mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_local_files_follow_the_umask(tmp_path, umask, mode):
  previous = os.umask(umask)
  try:
    atomic_write_text(tmp_path / "out.txt", "x")
    with atomic_output(tmp_path / "out.bin", "wb") as f:
      f.write(b"x")
  finally:
    os.umask(previous)
  for name in ("out.txt", "out.bin"):
    assert stat.S_IMODE(os.stat(tmp_path / name).st_mode) == mode


def test_atomic_directory_replaces_only_on_success(tmp_path):
  target = tmp_path / "export"
  with atomic_directory(target) as new:
    assert os.path.basename(new) == f".export.tmp-{os.getpid()}"
    (tmp_path / new / "v1").write_text("1")
  assert os.listdir(target) == ["v1"]
  with pytest.raises(KeyboardInterrupt):
    with atomic_directory(target) as new:
      (tmp_path / new / "v2").write_text("2")
      raise KeyboardInterrupt
  assert os.listdir(target) == ["v1"] and os.listdir(tmp_path) == ["export"]
  with atomic_directory(str(target) + "/") as new:
    (tmp_path / new / "v3").write_text("3")
  assert os.listdir(target) == ["v3"] and os.listdir(tmp_path) == ["export"]


@pytest.mark.parametrize("made_by", ["makedirs", "open_file"])
def test_ctrl_c_just_after_a_temporary_is_made_leaves_nothing(tmp_path, monkeypatch, made_by):
  """SIGINT's KeyboardInterrupt can land right after the system call that made the
  temporary, before the writer's block starts: the temporary still goes."""
  real = getattr(filesystem, made_by)

  def interrupted(*args):
    real(*args)
    raise KeyboardInterrupt

  monkeypatch.setattr(filesystem, made_by, interrupted)
  with pytest.raises(KeyboardInterrupt):
    if made_by == "makedirs":
      with fileio.staging_directory(tmp_path / "export"):
        pass
    else:
      atomic_write_text(tmp_path / "out.txt", "x")
  monkeypatch.setattr(filesystem, made_by, real)
  if made_by == "makedirs":
    with fileio.staging_directory(tmp_path / "export"):
      monkeypatch.setattr(filesystem, made_by, interrupted)
      with pytest.raises(KeyboardInterrupt):
        with atomic_directory(tmp_path / "export"):
          pass
  assert os.listdir(tmp_path) == []


def test_failed_directory_move_puts_the_old_one_back(tmp_path, monkeypatch):
  target = tmp_path / "export"
  target.mkdir()
  (target / "v1").write_text("1")
  real = filesystem.rename

  def failing(source, dest):
    if ".tmp-" in os.fspath(source):
      raise OSError("injected")
    real(source, dest)

  monkeypatch.setattr(filesystem, "rename", failing)
  with pytest.raises(OSError, match="injected"):
    with atomic_directory(target) as new:
      (tmp_path / new / "v2").write_text("2")
  assert os.listdir(target) == ["v1"] and os.listdir(tmp_path) == ["export"]


class _Exited(BaseException):
  """What `os._exit` does to the rest of a test: nothing of it runs."""


def test_a_signal_handler_deletes_held_temporaries_never_a_committed_output(tmp_path):
  """`remove_held` (what cli's handler calls before it ends the process at once), run while
  writers hold a file, a directory and an export's staging: those go; what was committed
  before and what the user had stay."""
  atomic_write_text(tmp_path / "committed.txt", "kept")
  (tmp_path / "export").mkdir()
  (tmp_path / "export" / "users.txt").write_text("mine")
  with pytest.raises(_Exited):
    with (atomic_output(tmp_path / "out.txt") as f, fileio.staging_directory(tmp_path / "export"),
          atomic_directory(tmp_path / "export") as new):
      f.write("half")
      (tmp_path / new / "model.pb").write_text("half")
      fileio.atomic.remove_held()
      listed = sorted(os.listdir(tmp_path))
      raise _Exited
  assert listed == ["committed.txt", "export"]
  assert (tmp_path / "committed.txt").read_text() == "kept"
  assert os.listdir(tmp_path / "export") == ["users.txt"]
  assert not fileio.atomic._HELD  # pylint: disable=protected-access


@pytest.mark.parametrize("before", ["rename 1", "rename 2", "delete old"])
def test_a_signal_handler_during_a_directory_swap_leaves_one_whole_export(
    tmp_path, monkeypatch, before):
  """The handler runs before the swap's 1st rename (the user's export aside), its 2nd (the new
  one in place), or as the old one is deleted: the user's export is put back, or the new one is
  whole; no temporary is left."""
  target = tmp_path / "export"
  target.mkdir()
  (target / "v1").write_text("1")
  real_rename, real_delete = filesystem.rename, filesystem.delete
  renames = []

  def handler_runs():
    monkeypatch.undo()
    fileio.atomic.remove_held()
    monkeypatch.setattr(filesystem, "rename", lambda *args: None)  # nothing runs after os._exit
    monkeypatch.setattr(filesystem, "delete", lambda *args: None)
    raise _Exited

  def rename(source, dest):
    renames.append(source)
    if before == f"rename {len(renames)}":
      handler_runs()
    real_rename(source, dest)

  def delete(path):
    if before == "delete old" and ".old-" in os.fspath(path) and os.path.exists(path):
      handler_runs()
    real_delete(path)

  monkeypatch.setattr(filesystem, "rename", rename)
  monkeypatch.setattr(filesystem, "delete", delete)
  with pytest.raises(_Exited):
    with atomic_directory(target) as new:
      (tmp_path / new / "v2").write_text("2")
  assert os.listdir(tmp_path) == ["export"]
  assert os.listdir(target) == (["v2"] if before == "delete old" else ["v1"])


def test_temporaries_of_killed_processes_are_removed_by_the_next_write(tmp_path):
  dead = subprocess.Popen([sys.executable, "-c", "pass"])
  dead.wait()
  live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
  try:
    for pid in (dead.pid, live.pid):
      (tmp_path / f".out.txt.tmp-{pid}").write_text("half")
      (tmp_path / f".export.tmp-{pid}").mkdir()
    (tmp_path / f".other.txt.tmp-{dead.pid}").write_text("another target's")
    (tmp_path / f".export.old-{dead.pid}").mkdir()  # the previous export mid-swap: kept
    (tmp_path / f".export.staging-{dead.pid}").mkdir()  # an export's assets, before saving
    (tmp_path / f".export.staging-{live.pid}").mkdir()
    atomic_write_text(tmp_path / "out.txt", "done")
    with fileio.staging_directory(tmp_path / "export"), atomic_directory(tmp_path / "export"):
      pass
    assert sorted(os.listdir(tmp_path)) == sorted([
        "out.txt", "export", f".out.txt.tmp-{live.pid}", f".export.tmp-{live.pid}",
        f".other.txt.tmp-{dead.pid}", f".export.old-{dead.pid}",
        f".export.staging-{live.pid}"])
  finally:
    live.kill()
    live.wait()


def test_frame_record_is_read_by_tensorflow(root):
  path = f"{root}/framed.tfrecord"
  with atomic_output(path, "wb") as f:
    f.write(fileio.frame_record(b"hello world") * 2 + fileio.frame_record(b""))
  # TensorFlow's reader checks both CRCs of every record.
  assert [r.numpy() for r in tf.data.TFRecordDataset(path)] == [b"hello world"] * 2 + [b""]


def test_frame_many_equals_framed_records_end_to_end():
  records = [b"a", b"", b"x" * 300]
  data, ends = fileio.tfrecord.frame_many(records)
  assert data == b"".join(map(fileio.frame_record, records))
  assert ends == [17, 33, 349]
  # A prefix per length goes inside the record, under its CRCs.
  prefixes = {n: bytes([n % 256]) * 3 for n in (1, 0, 300)}
  data, ends = fileio.tfrecord.frame_many(records, prefixes)
  assert data == b"".join(fileio.frame_record(prefixes[len(r)] + r) for r in records)
  assert ends == [20, 39, 358]


# Three framed records of 5, 0 and 300 bytes: 21, 16 and 316 bytes of file.
RECORDS = b"".join(fileio.frame_record(b"x" * n) for n in (5, 0, 300))


def _write_bytes(path, data):
  with atomic_output(path, "wb") as f:
    f.write(data)


def test_count_records_counts_whole_records(root):
  path = f"{root}/r.tfrecord"
  _write_bytes(path, RECORDS)
  assert fileio.count_records(path) == 3
  _write_bytes(path, RECORDS[:21 + 16])
  assert fileio.count_records(path) == 2  # a file cut between records cannot be told apart


@pytest.mark.parametrize("data, message", [
    (RECORDS[:21 + 16 + 5],
     r"record 3 \(at byte 37\) is cut: the file ends 5 bytes into its 12-byte header"),
    (RECORDS[:21 + 16 + 100],
     r"record 3 \(at byte 37\) is cut: the file ends 88 bytes into its 304-byte body"),
    (RECORDS[:21 + 16 + 12 + 7] + b"y" + RECORDS[21 + 16 + 12 + 8:],
     r"record 3 \(at byte 37\) is damaged: its data fails its CRC"),
    (RECORDS[:21] + b"\xff" + RECORDS[22:],
     r"record 2 \(at byte 21\) is damaged: its length fails its CRC"),
    (b"not a record file\n", r"not a TFRecord file \(its first bytes are no record header"),
], ids=["cut-header", "cut-body", "data-crc", "length-crc", "not-records"])
def test_count_records_checks_every_record(root, data, message):
  path = f"{root}/r.tfrecord"
  _write_bytes(path, data)
  with pytest.raises(InputError, match=r"^.*r\.tfrecord: " + message):
    fileio.count_records(path)


def test_reading_helpers(root):
  _write(f"{root}/a.txt", "one\ntwo\n")
  with fileio.open_file(f"{root}/a.txt", "rb") as f:
    assert list(f) == [b"one\n", b"two\n"]
  assert fileio.file_size(f"{root}/a.txt") == 8
  assert fileio.exists(f"{root}/a.txt") and not fileio.exists(f"{root}/b.txt")
  assert fileio.isdir(root) and not fileio.isdir(f"{root}/a.txt")


@pytest.mark.multiprocess
def test_local_paths_do_not_import_tensorflow(tmp_path):
  """create_pretraining_data's processes and `tokenization` rely on it for a fast start."""
  code = f"""
import sys
import fileio, pretraining_data.pipeline, tokenization
base = {str(tmp_path)!r}
fileio.atomic_write_text(base + "/a.txt", "x")
with fileio.atomic_output(base + "/b.bin", "wb") as f:
  f.write(fileio.frame_record(b"x"))
assert fileio.resolve_input_files(base + "/*") == [base + "/a.txt", base + "/b.bin"]
with fileio.atomic_directory(base + "/d"):
  pass
assert "tensorflow" not in sys.modules, "fileio imported TensorFlow"
"""
  subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO, timeout=60)


def test_staging_directory_is_beside_the_target_and_removed(tmp_path):
  with fileio.staging_directory(tmp_path / "export") as staging:
    assert staging == str(tmp_path / f".export.staging-{os.getpid()}")
    (tmp_path / staging / "asset.txt").write_text("x")
  assert os.listdir(tmp_path) == []
  with pytest.raises(KeyboardInterrupt):
    with fileio.staging_directory(tmp_path / "export"):
      raise KeyboardInterrupt
  assert os.listdir(tmp_path) == []


def test_outputs_through_a_link_are_written_where_it_points(tmp_path):
  """A link to a directory (an export) or a file stays a link; its target gets the output."""
  (tmp_path / "real").mkdir()
  (tmp_path / "real" / "old").write_text("old")
  (tmp_path / "link").symlink_to("real")
  (tmp_path / "file.txt").write_text("old")
  (tmp_path / "file-link").symlink_to("file.txt")
  for _ in range(2):  # the second replaces a SavedModel-like directory already there
    with fileio.staging_directory(tmp_path / "link"), atomic_directory(tmp_path / "link") as new:
      (tmp_path / new / "v").write_text("new")
  atomic_write_text(tmp_path / "file-link", "new")
  assert os.readlink(tmp_path / "link") == "real" and os.listdir(tmp_path / "real") == ["v"]
  assert os.readlink(tmp_path / "file-link") == "file.txt"
  assert (tmp_path / "file.txt").read_text() == "new"
  assert sorted(os.listdir(tmp_path)) == ["file-link", "file.txt", "link", "real"]


def test_an_output_another_run_wrote_meanwhile_is_kept(root):
  """Without overwrite, a target that appeared while this run wrote is not replaced."""
  target = f"{root}/out.txt"
  with pytest.raises(fileio.OutputError, match=r"out\.txt' was written by another run while "
                     r"this one ran: kept it, and discarded this run's output"):
    with atomic_output(target, overwrite=False) as f:
      f.write("this run's")
      _write(target, "the other run's")
  assert _read(target) == "the other run's"
  assert tf.io.gfile.listdir(root) == ["out.txt"]
  atomic_write_text(f"{root}/new.txt", "mine", overwrite=False)  # no other run: written
  assert _read(f"{root}/new.txt") == "mine"


def test_an_export_another_run_filled_meanwhile_is_kept(tmp_path):
  target = tmp_path / "export"
  with pytest.raises(fileio.OutputError, match="was written by another run"):
    with atomic_directory(target, overwrite=False) as new:
      (tmp_path / new / "mine").write_text("1")
      target.mkdir()
      (target / "theirs").write_text("2")
  assert os.listdir(target) == ["theirs"] and os.listdir(tmp_path) == ["export"]
  (target / "theirs").unlink()
  with atomic_directory(target, overwrite=False) as new:  # an empty directory is replaced
    (tmp_path / new / "mine").write_text("1")
  assert os.listdir(target) == ["mine"]
