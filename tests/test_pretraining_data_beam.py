"""create_pretraining_data on Apache Beam: the local tool's shard files byte for byte, the checks
before a pipeline is built, no file left by a failed run. Beam's local runners only (named
explicitly), so nothing leaves the machine."""

import os
import subprocess
import sys

import pytest

pytest.importorskip("apache_beam")  # requirements-test.txt brings it (requirements-beam.txt)

# pylint: disable=wrong-import-position
from cli import FlagError
from fileio import InputError, OutputError
from pretraining_data import beam_pipeline, pipeline, shards
from tests.paths import REPO
from tokenization import VocabError

FLAGS = dict(dupe_factor=2, chunk_mb=0.3, num_output_shards=3, do_whole_word_mask=True)
NAMES = [f"records-0000{i}-of-00003" for i in range(3)]


def _config(inputs, output, vocab, **kw):
  return pipeline.PretrainingDataOptions(input_file=str(inputs), output_file=str(output), vocab_file=vocab,
                         **{**FLAGS, **kw})


def _quiet():
  return open(os.devnull, "w")


@pytest.fixture(scope="module")
def heldout(shared_dir):
  return shared_dir / "data" / "corpus" / "gutenberg_heldout.txt"


@pytest.fixture(scope="module")
def local(tmp_path_factory, heldout, google_vocab):
  """The local tool's shards of the held-out Gutenberg text (0.9 MB, 3 chunks, 2 dupes)."""
  out = tmp_path_factory.mktemp("local") / "records"
  summary = pipeline.run(_config(heldout, out, google_vocab, num_workers=1), _quiet())
  return summary, {os.path.basename(p): open(p, "rb").read() for p in summary.output_files}


def test_beam_writes_the_local_tools_shards_byte_for_byte(tmp_path, heldout, google_vocab,
                                                          local):
  """Here the corpus comes in two files, cut between documents: the chunks are numbered over
  the whole corpus, so the records do not depend on how the text is split into files."""
  text = heldout.read_bytes()
  cut = text.index(b"\n\n", len(text) // 2) + 2
  (tmp_path / "a.txt").write_bytes(text[:cut])
  (tmp_path / "b.txt").write_bytes(text[cut:])
  summary = beam_pipeline.run(_config(
      f"{tmp_path / 'a.txt'},{tmp_path / 'b.txt'}", tmp_path / "records", google_vocab,
      beam_pipeline_options="runner=DirectRunner,direct_running_mode=in_memory"), _quiet())
  local_summary, local_files = local
  assert sorted(local_files) == NAMES
  assert sorted(os.listdir(tmp_path)) == ["a.txt", "b.txt"] + NAMES  # no temporary left
  for name in NAMES:
    assert (tmp_path / name).read_bytes() == local_files[name], name
  assert summary.chunks == local_summary.chunks >= 3
  assert summary.instances == local_summary.instances > 4000
  assert summary.stats == local_summary.stats
  assert summary.read.documents == local_summary.read.documents == 174
  assert summary.read.bytes_read == len(text)


def _cli(cwd, *args):
  return subprocess.run([sys.executable, str(REPO / "create_pretraining_data.py"), *args],
                        capture_output=True, text=True, cwd=cwd, timeout=300)


@pytest.mark.slow  # ~15 s on a loaded 2-core machine: Beam's worker processes start slowly
@pytest.mark.multiprocess
def test_cli_on_the_multi_process_runner(tmp_path, heldout, google_vocab, local):
  """The README's local recipe, started outside the repository: its worker processes find
  our packages, and a second run without --overwrite is refused before any work."""
  args = [f"--input_file={heldout}", f"--output_file={tmp_path / 'records'}",
          f"--vocab_file={google_vocab}", "--dupe_factor=2", "--chunk_mb=0.3",
          "--num_output_shards=3", "--do_whole_word_mask",
          "--beam_pipeline_options=runner=DirectRunner,direct_running_mode=multi_processing,"
          "direct_num_workers=2"]
  done = _cli(tmp_path, *args)
  assert done.returncode == 0, done.stderr
  assert f"Wrote {local[0].instances:,} instances to 3 file(s)" in done.stderr
  for name in NAMES:
    assert (tmp_path / name).read_bytes() == local[1][name], name
  again = _cli(tmp_path, *args)
  assert again.returncode == 1 and again.stderr.count("\n") == 1, again.stderr
  assert "create_pretraining_data: error: output file exists" in again.stderr


@pytest.mark.parametrize("change,error,message", [
    (dict(input_file="{tmp}/none*.txt"), InputError, "matches no file"),
    (dict(vocab_file="{tmp}/vocab.txt"), VocabError, "not found"),
    (dict(output_file="{tmp}/old"), OutputError, "exists.*--overwrite"),
    (dict(num_output_shards=0), FlagError, "--num_output_shards must be >= 1"),
    (dict(num_output_shards=None), FlagError, "give --num_output_shards"),
    (dict(output_file="{tmp}/a,{tmp}/b"), FlagError, "one --output_file prefix, not a list"),
    (dict(beam_pipeline_options="runner=NoSuchRunner"), FlagError, "runner 'NoSuchRunner'"),
    (dict(beam_pipeline_options="runner=DirectRunner,=x"), FlagError, "not key=value"),
])
def test_bad_flags_and_inputs_fail_before_a_pipeline_is_built(tmp_path, heldout, google_vocab,
                                                              monkeypatch, change, error,
                                                              message):
  monkeypatch.setattr(beam_pipeline, "_build", lambda *a: pytest.fail("pipeline built"))
  (tmp_path / "old-00001-of-00003").write_bytes(b"a user's file")
  kw = dict(input_file=str(heldout), output_file=str(tmp_path / "records"),
            vocab_file=google_vocab, beam_pipeline_options="runner=DirectRunner")
  kw.update({k: v.format(tmp=tmp_path) if isinstance(v, str) else v for k, v in change.items()})
  with pytest.raises(error, match=message):
    beam_pipeline.run(pipeline.PretrainingDataOptions(**{**FLAGS, **kw}), _quiet())
  assert os.listdir(tmp_path) == ["old-00001-of-00003"]


def test_an_error_inside_the_pipeline_is_one_line_and_leaves_no_file(tmp_path, google_vocab):
  corpus = tmp_path / "corpus.txt"
  corpus.write_bytes(b"A first sentence.\nA second one.\n\nbad \xff byte\n")
  with pytest.raises(InputError, match=r"^\S*corpus\.txt:4: line is not valid UTF-8 \(invalid "
                                       r"start byte at byte 4\); drop --strict[^\n]*$"):
    beam_pipeline.run(_config(corpus, tmp_path / "records", google_vocab, strict=True,
                              beam_pipeline_options="runner=DirectRunner"), _quiet())
  assert os.listdir(tmp_path) == ["corpus.txt"]


def test_shard_names_and_rule():
  assert shards.shard_names("gs://b/train", 12) == [
      f"gs://b/train-{i:05d}-of-00012" for i in range(12)]
  assert shards.shard_names("x", 123456)[-1] == "x-123455-of-123456"
  assert beam_pipeline.parse_options(
      " runner=DataflowRunner, project=p ,temp_location=gs://b/t,save_main_session") == (
          "DataflowRunner", ["--project=p", "--temp_location=gs://b/t", "--save_main_session"])
  assert beam_pipeline.parse_options("direct_num_workers=2")[0] == "DirectRunner"
