"""create_pretraining_data end to end: determinism, bounded memory, atomic output, bad input, CLI."""

import errno
import os
import pathlib
import subprocess
import sys

import pytest

import cli
import tokenization
from fileio import InputError, OutputError, filesystem
from pretraining_data import masking, pipeline, writer
from tests.full_disk import open_on_full_disk
from tests.paths import REPO


def _run(tmp_path, inputs, vocab, name="out.tfrecord", **kw):
  kw.setdefault("dupe_factor", 1)
  kw.setdefault("num_workers", 1)
  config = pipeline.PretrainingDataOptions(input_file=str(inputs),
                           output_file=kw.pop("output_file", str(tmp_path / name)),
                           vocab_file=vocab, **kw)
  return pipeline.run(config, progress_stream=open(os.devnull, "w"))


@pytest.fixture(scope="module")
def heldout(shared_dir):
  return shared_dir / "data" / "corpus" / "gutenberg_heldout.txt"


@pytest.mark.multiprocess
def test_output_identical_for_1_and_2_workers_across_chunks(tmp_path, heldout, google_vocab):
  kw = dict(dupe_factor=2, chunk_mb=0.3, do_whole_word_mask=True)
  one = _run(tmp_path, heldout, google_vocab, "w1.tfrecord", num_workers=1, **kw)
  two = _run(tmp_path, heldout, google_vocab, "w2.tfrecord", num_workers=2, **kw)
  assert one.chunks == two.chunks >= 3
  assert (tmp_path / "w1.tfrecord").read_bytes() == (tmp_path / "w2.tfrecord").read_bytes()
  assert one.instances == two.instances > 3000
  other = _run(tmp_path, heldout, google_vocab, "seed.tfrecord", random_seed=1, **kw)
  assert (tmp_path / "seed.tfrecord").read_bytes() != (tmp_path / "w1.tfrecord").read_bytes()
  assert abs(other.instances - one.instances) < 0.05 * one.instances


def test_round_robin_over_output_files(tmp_path, heldout, google_vocab):
  single = _run(tmp_path, heldout, google_vocab, "single.tfrecord")
  outs = [str(tmp_path / f"shard{i}.tfrecord") for i in range(3)]
  sharded = _run(tmp_path, heldout, google_vocab, output_file=",".join(outs))
  assert sharded.instances == single.instances
  records = lambda p: _framed_records(pathlib.Path(p).read_bytes())
  merged = [None] * single.instances
  for i, path in enumerate(outs):
    merged[i::3] = records(path)
  assert merged == records(tmp_path / "single.tfrecord")


def _framed_records(data):
  """Splits TFRecord bytes into framed records (length from the 8-byte header)."""
  out, i = [], 0
  while i < len(data):
    n = int.from_bytes(data[i:i + 8], "little")
    out.append(data[i:i + 16 + n])
    i += 16 + n
  return out


def test_memory_is_bounded_by_the_chunk_not_the_corpus(tmp_path, shared_dir, google_vocab):
  """A 2.9 MB corpus in 0.25 MB chunks: the parent never holds more than one
  (chunk, dupe) of records, ~1/15 of the output here."""
  corpus = ",".join(str(shared_dir / "data" / "corpus" / f) for f in
                    ("gutenberg_heldout.txt", "wikitext2_valid.txt", "gutenberg_heldout.txt"))
  summary = _run(tmp_path, corpus, google_vocab, chunk_mb=0.25, dupe_factor=2)
  assert summary.chunks >= 10
  per_chunk_dupe = summary.instances / (2 * summary.chunks)
  assert summary.max_records_held < 3 * per_chunk_dupe
  assert summary.max_records_held < summary.instances / 5


def test_failure_leaves_no_output_and_keeps_the_old_file(tmp_path, heldout, google_vocab,
                                                         monkeypatch):
  out = tmp_path / "out.tfrecord"
  out.write_bytes(b"previous")
  calls = []
  real = masking.mask_inputs

  def failing(*args, **kw):
    calls.append(1)
    if len(calls) == 3:
      raise RuntimeError("injected failure")
    return real(*args, **kw)

  monkeypatch.setattr(masking, "mask_inputs", failing)
  with pytest.raises(RuntimeError, match="injected"):
    _run(tmp_path, heldout, google_vocab, overwrite=True)
  assert out.read_bytes() == b"previous"
  assert sorted(p.name for p in tmp_path.iterdir()) == ["out.tfrecord"]
  monkeypatch.undo()
  with pytest.raises(OutputError, match="exists.*--overwrite"):
    _run(tmp_path, heldout, google_vocab)
  assert out.read_bytes() == b"previous"
  summary = _run(tmp_path, heldout, google_vocab, overwrite=True)
  assert out.stat().st_size > 1000 and summary.instances > 1000


def test_a_full_disk_leaves_no_output_and_names_the_file(tmp_path, heldout, google_vocab,
                                                         monkeypatch):
  """The writes to the second output fail as on a full disk: both temporaries go."""
  real_open = filesystem.open_file

  def open_file(path, mode):
    if "b.tfrecord" not in str(path):
      return real_open(path, mode)
    return open_on_full_disk(path, mode)

  monkeypatch.setattr(filesystem, "open_file", open_file)
  outputs = f"{tmp_path / 'a.tfrecord'},{tmp_path / 'b.tfrecord'}"
  with pytest.raises(OSError) as raised:
    _run(tmp_path, heldout, google_vocab, output_file=outputs)
  assert raised.value.errno == errno.ENOSPC
  assert raised.value.filename == str(tmp_path / "b.tfrecord")
  assert os.listdir(tmp_path) == []


def test_an_input_file_is_never_an_output(tmp_path, google_vocab):
  """--output_file naming the corpus (here through a symlink) is refused even with --overwrite."""
  corpus = tmp_path / "corpus.txt"
  corpus.write_text("The first sentence.\nThe second one.\n\nAnother document.\n")
  (tmp_path / "link.txt").symlink_to(corpus)
  before = corpus.read_bytes()
  for output in (corpus, tmp_path / "link.txt"):
    with pytest.raises(OutputError, match=r"is also an input \(--input_file\)"):
      _run(tmp_path, corpus, google_vocab, output_file=f"{tmp_path / 'ok.tfrecord'},{output}",
           overwrite=True)
  assert corpus.read_bytes() == before
  assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.txt", "link.txt"]


def test_temporary_name_until_commit(tmp_path):
  paths = [str(tmp_path / "a"), str(tmp_path / "b")]
  w = writer.ShardedRecordWriter(paths)
  w.write(b"x")
  w.write(b"y")
  w.write(b"z")
  assert not any(os.path.exists(p) for p in paths)
  assert all(os.path.exists(t) and os.path.basename(t).startswith(".") for t in w.temp_paths)
  w.commit()
  assert [open(p, "rb").read() for p in paths] == [b"xz", b"y"]
  assert not any(os.path.exists(t) for t in w.temp_paths)


def test_non_utf8_lines_skipped_and_counted_or_strict(tmp_path, google_vocab):
  f = tmp_path / "bad.txt"
  good = "The cat sat on the mat.\nIt was warm.\nThen it left.\n"
  f.write_bytes(good.encode() + b"bad \xff\xfe byte\n\n" + good.encode() + b"\n" + good.encode())
  summary = _run(tmp_path, f, google_vocab)
  assert summary.read.bad_utf8_lines == 1 and summary.instances >= 3
  assert "skipped 1 non-UTF-8 line(s)" in "\n".join(summary.lines())
  with pytest.raises(InputError, match=r"bad\.txt:4: line is not valid UTF-8"):
    _run(tmp_path, f, google_vocab, name="strict.tfrecord", strict=True)
  assert not (tmp_path / "strict.tfrecord").exists()


def test_a_file_mostly_not_utf8_is_refused_by_name(tmp_path, google_vocab):
  good = b"The cat sat on the mat.\n"
  # Binary data with a few text lines: refused at its 100th bad line, not read to the end.
  (tmp_path / "ok.txt").write_bytes(good * 40)
  binary = tmp_path / "model.bin"
  binary.write_bytes(good * 3 + b"\xff\xfe\x00 junk\n" * 1000 + good)
  with pytest.raises(InputError, match=r"model\.bin: 100 of its first 103 lines are not valid "
                                       r"UTF-8: not a UTF-8 text file"):
    _run(tmp_path, f"{tmp_path / 'ok.txt'},{binary}", google_vocab, name="b.tfrecord")
  # A small one: judged at its end (2 bad lines of 3).
  small = tmp_path / "small.bin"
  small.write_bytes(b"\x89PNG data\n" + good + b"\xff\xd8 more\n")
  with pytest.raises(InputError, match=r"small\.bin: 2 of its first 3 lines"):
    _run(tmp_path, small, google_vocab, name="s.tfrecord")
  assert sorted(os.listdir(tmp_path)) == ["model.bin", "ok.txt", "small.bin"]


def test_lines_far_longer_than_an_instance_are_counted_with_a_warning(tmp_path, google_vocab,
                                                                       caplog):
  f = tmp_path / "long.txt"
  sentence = "The cat sat on the mat. "
  f.write_text("A short first sentence.\n" + sentence * 200 + "\nShort.\n\n" +
               "Another document.\n" + sentence * 150 + "\n")
  summary = _run(tmp_path, f, google_vocab, max_seq_length=32, max_predictions_per_seq=5)
  assert summary.read.long_lines == 2 and summary.instances >= 2
  assert ("2 line(s) over 1,600 characters, mostly dropped (see the warning)"
          in "\n".join(summary.lines()))
  warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
  assert len(warnings) == 1 and f"{f}:2: a line of 4,799 characters" in warnings[0]


def test_empty_documents_counted_and_empty_input_fails(tmp_path, google_vocab):
  f = tmp_path / "docs.txt"
  # Middle document: only characters the tokenizer drops (control characters).
  f.write_text("One sentence here.\nAnother one.\n\n\x00\x01\n\n\nThird doc.\nMore text.\n")
  summary = _run(tmp_path, f, google_vocab)
  assert summary.empty_documents == 1 and summary.read.documents == 3
  empty = tmp_path / "empty.txt"
  empty.write_text("\n\n  \n")
  with pytest.raises(InputError, match="no instances"):
    _run(tmp_path, empty, google_vocab, name="e.tfrecord")
  assert not (tmp_path / "e.tfrecord").exists()


@pytest.mark.parametrize("pattern,message", [
    ("{tmp}/missing.txt", "input file not found"),
    ("{tmp}/*.nothing", "matches no file"),
    (",", "names no file"),
])
def test_missing_inputs(tmp_path, google_vocab, pattern, message):
  with pytest.raises(InputError, match=message):
    _run(tmp_path, pattern.format(tmp=tmp_path), google_vocab)


def test_globs_and_comma_lists(tmp_path, heldout, google_vocab):
  for i in range(2):
    (tmp_path / f"part{i}.txt").write_text(heldout.read_text()[:20000])
  summary = _run(tmp_path, f"{tmp_path}/part*.txt,{heldout}", google_vocab)
  assert [os.path.basename(p) for p in summary.input_files] == [
      "part0.txt", "part1.txt", "gutenberg_heldout.txt"]


def test_tensorflow_file_systems(tmp_path, heldout, google_vocab):
  """Input and output through tf.io.gfile (ram:// here, gs:// alike): the same bytes."""
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  text = heldout.read_text()[:20000]
  (tmp_path / "in.txt").write_text(text)
  local = _run(tmp_path, tmp_path / "in.txt", google_vocab, "local.tfrecord")
  with tf.io.gfile.GFile("ram://pipeline/in.txt", "w") as f:
    f.write(text)
  remote = _run(tmp_path, "ram://pipeline/in*.txt", google_vocab,
                output_file="ram://pipeline/out.tfrecord")
  assert remote.instances == local.instances and remote.read.bytes_read == len(text.encode())
  with tf.io.gfile.GFile("ram://pipeline/out.tfrecord", "rb") as f:
    assert f.read() == (tmp_path / "local.tfrecord").read_bytes()
  assert sorted(tf.io.gfile.listdir("ram://pipeline")) == ["in.txt", "out.tfrecord"]
  tf.io.gfile.rmtree("ram://pipeline")


def test_bad_vocab(tmp_path, heldout):
  with pytest.raises(tokenization.VocabError, match="not found"):
    _run(tmp_path, heldout, str(tmp_path / "nope.txt"))
  v = tmp_path / "vocab.txt"
  v.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\n")
  with pytest.raises(tokenization.VocabError, match=r"lacks.*\[MASK\]"):
    _run(tmp_path, heldout, str(v))
  v.write_text("[PAD]\n\n[UNK]\n")
  with pytest.raises(tokenization.VocabError, match="blank line"):
    _run(tmp_path, heldout, str(v))


@pytest.mark.parametrize("flag,value,message", [
    ("max_seq_length", 4, "too small"),
    ("masked_lm_prob", 0.0, "masked_lm_prob"),
    ("dupe_factor", 0, "dupe_factor"),
    ("short_seq_prob", 1.5, "short_seq_prob"),
    ("max_predictions_per_seq", 500, r"--max_predictions_per_seq=500 exceeds --max_seq_length"),
    ("num_output_shards", 0, r"--num_output_shards must be >= 1, got 0"),
])
def test_bad_settings(tmp_path, heldout, google_vocab, flag, value, message):
  with pytest.raises(cli.FlagError, match=message):
    _run(tmp_path, heldout, google_vocab, **{flag: value})


def test_smallest_sequence_length_works(tmp_path, heldout, google_vocab):
  summary = _run(tmp_path, heldout, google_vocab, max_seq_length=5, max_predictions_per_seq=1)
  # Every sentence fills the 2-token target alone, so it becomes A of a random-next pair.
  assert summary.instances == summary.stats["random_next"] == 7473  # sentences in the file


def _cli(*args):
  return subprocess.run([sys.executable, str(REPO / "create_pretraining_data.py"), *args],
                        capture_output=True, text=True, cwd=REPO, timeout=300)


@pytest.mark.multiprocess
def test_cli(tmp_path, heldout, google_vocab):
  out = tmp_path / "cli.tfrecord"
  args = [f"--input_file={heldout}", f"--output_file={out}", f"--vocab_file={google_vocab}",
          "--dupe_factor=1", "--num_workers=2"]
  ok = _cli(*args)
  assert ok.returncode == 0, ok.stderr
  assert "Wrote" in ok.stderr and "random-next pairs" in ok.stderr and out.exists()
  again = _cli(*args)
  assert again.returncode == 1 and "exists" in again.stderr and "--overwrite" in again.stderr
  missing = _cli(*args[1:], f"--input_file={tmp_path}/none*.txt")
  assert missing.returncode == 1 and "matches no file" in missing.stderr
  assert "Traceback" not in missing.stderr


@pytest.mark.multiprocess
@pytest.mark.parametrize("signame,to_group", [("SIGINT", False), ("SIGTERM", False),
                                              ("SIGTERM", True)])
def test_interrupt_leaves_no_output(tmp_path, shared_dir, google_vocab, signame, to_group):
  """A signal to the script, or to its whole process group (`kill -- -PGID`, systemd),
  stops it within a minute with nothing written (the workers leave the signal to it)."""
  import signal  # pylint: disable=import-outside-toplevel
  out = tmp_path / "big.tfrecord"
  proc = subprocess.Popen(
      [sys.executable, str(REPO / "create_pretraining_data.py"),
       f"--input_file={shared_dir / 'data' / 'corpus' / 'gutenberg_train.txt'}",
       f"--output_file={out}", f"--vocab_file={google_vocab}", "--num_workers=2",
       "--dupe_factor=10", "--chunk_mb=1"],
      cwd=REPO, stderr=subprocess.PIPE, text=True, start_new_session=to_group)
  try:
    line = proc.stderr.readline()  # the first progress line: records are being written
    assert "documents read" in line, line
    if to_group:
      os.killpg(proc.pid, getattr(signal, signame))
    else:
      proc.send_signal(getattr(signal, signame))
    _, err = proc.communicate(timeout=60)
  finally:
    proc.kill()  # never leave a stuck child behind a failed test
  assert proc.returncode == 130, err
  assert "interrupted" in err
  assert list(tmp_path.iterdir()) == []


def _die(task):
  os.kill(os.getpid(), 9)


@pytest.mark.multiprocess
def test_a_dead_worker_fails_the_run_with_one_line(tmp_path, heldout, google_vocab, monkeypatch):
  """A worker killed from outside (the OOM killer) ends the run with a WorkerLost naming what
  to do, and no output, instead of leaving it waiting for the lost task."""
  monkeypatch.setattr(pipeline, "_records_task", _die)
  with pytest.raises(pipeline.WorkerLost, match="a worker process died"):
    _run(tmp_path, heldout, google_vocab, num_workers=2)
  assert list(tmp_path.iterdir()) == []


def test_shards_hold_the_records_by_the_key_rule(tmp_path, heldout, google_vocab):
  """--num_output_shards: the same records as a single file, spread by key over PREFIX-i-of-N
  (an empty shard is written too); the order in a shard is the key order, not round-robin."""
  single = _run(tmp_path, heldout, google_vocab, "single.tfrecord")
  sharded = _run(tmp_path, heldout, google_vocab, output_file=str(tmp_path / "train"),
                 num_output_shards=3)
  assert [os.path.basename(p) for p in sharded.output_files] == [
      f"train-0000{i}-of-00003" for i in range(3)]
  parts = [_framed_records(pathlib.Path(p).read_bytes()) for p in sharded.output_files]
  assert sorted(sum(parts, [])) == sorted(_framed_records(
      (tmp_path / "single.tfrecord").read_bytes()))
  assert all(0.3 < len(p) / sharded.instances < 0.37 for p in parts)
  tiny = tmp_path / "tiny.txt"
  tiny.write_text("One sentence here.\nAnother one.\n")
  few = _run(tmp_path, tiny, google_vocab, output_file=str(tmp_path / "few"),
             num_output_shards=4)
  sizes = [os.path.getsize(p) for p in few.output_files]
  assert few.instances == 2 and sorted(sizes)[:2] == [0, 0] and max(sizes) > 0
  # Another shard count on the same prefix, even with --overwrite: both sets would match few-*.
  with pytest.raises(OutputError, match=r"few-00000-of-00004 is a shard of another set \(4 "
                                        r"file\(s\) PREFIX-\*-of-\*\): readers of \S*few-\* would mix"):
    _run(tmp_path, tiny, google_vocab, output_file=str(tmp_path / "few"), num_output_shards=2,
         overwrite=True)
  _run(tmp_path, tiny, google_vocab, output_file=str(tmp_path / "few"), num_output_shards=4,
       overwrite=True)


def test_lines_with_nul_bytes_are_cleaned_and_counted(tmp_path, google_vocab):
  f = tmp_path / "nul.txt"
  f.write_bytes(b"The cat\x00 sat on the mat.\nIt was warm.\n\nA\x00\x00nother document.\n"
                b"Its second line.\n")
  clean = tmp_path / "clean.txt"
  clean.write_bytes(f.read_bytes().replace(b"\x00", b""))
  summary = _run(tmp_path, f, google_vocab, name="nul.tfrecord")
  _run(tmp_path, clean, google_vocab, name="clean.tfrecord")
  assert summary.read.nul_lines == 2
  assert "cleaned 2 line(s) holding NUL bytes" in "\n".join(summary.lines())
  assert (tmp_path / "nul.tfrecord").read_bytes() == (tmp_path / "clean.tfrecord").read_bytes()


def test_beam_missing_is_one_line_naming_its_requirements(tmp_path, heldout, google_vocab,
                                                          monkeypatch):
  from pretraining_data import beam_pipeline  # pylint: disable=import-outside-toplevel
  monkeypatch.setitem(sys.modules, "apache_beam", None)  # as if not installed
  config = pipeline.PretrainingDataOptions(input_file=str(heldout), output_file=str(tmp_path / "records"),
                           vocab_file=google_vocab, num_output_shards=2,
                           beam_pipeline_options="runner=DirectRunner")
  with pytest.raises(cli.FlagError, match=r"needs Apache Beam, which is not installed: "
                                          r"pip install -r requirements-beam\.txt"):
    beam_pipeline.run(config, progress_stream=open(os.devnull, "w"))
  assert os.listdir(tmp_path) == []
