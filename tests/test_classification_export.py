"""The classifier SavedModel's executors: a one-row batch runs under the single-threaded
executor, or XLA-compiled with `xla_one_row`, as attributes of the saved graph, with the same
outputs as the plain export; and what saving it logs under `cli.run`."""

import logging

from absl import logging as absl_logging
import numpy as np
import pytest
import tensorflow as tf

from classification import export
from cli import app
import modeling
from tests.classifier_jobs import saved_call_attributes, xla_compiled_calls
from tests.paths import SAMPLE
from tests.tiny_models import TINY_CONFIG
from tokenization.in_graph import InGraphTokenizer

PAIRS = [("A wonderful film, I loved every minute of it.", "The soup was cold."),
         ("Überraschend gut!", ""), ("short", "and a much longer second segment than that")]


class _Messages(logging.Handler):
  """Collects the messages of the records it is handed."""

  def __init__(self):
    super().__init__(logging.INFO)
    self.messages = []

  def emit(self, record):
    self.messages.append(record.getMessage())


def _rename_notes(messages):
  return [m for m in messages if "with unsupported characters which will be renamed" in m]


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
  """{"dirs": {name: export dir}, "notes": [...]} of one tiny classifier: "executors" as
  exported, "inline" without the single-batch executor (the classifier inlined into the
  signatures), "xla" with `xla_one_row`; the signature-rename notes TensorFlow logged during
  the first two exports, the second one under the filter that `cli.run` installs."""
  tmp = tmp_path_factory.mktemp("exports")
  vocab = str(SAMPLE / "vocab.txt")
  with open(vocab, encoding="utf-8") as f:
    config = modeling.BertConfig(vocab_size=len(f.read().splitlines()), **TINY_CONFIG)
  model = modeling.build_classifier(config, 2)
  dirs = {name: str(tmp / name) for name in ("executors", "inline", "xla")}
  logger, messages, verbosity = (absl_logging.get_absl_logger(), _Messages(),
                                 absl_logging.get_verbosity())
  absl_logging.set_verbosity(absl_logging.INFO)
  logger.addHandler(messages)
  filters = list(logger.filters)
  notes = []
  try:
    export.export_saved_model(model, dirs["executors"], vocab, True, 32, ["0", "1"], False)
    notes.append(_rename_notes(messages.messages))
    messages.messages.clear()
    app.drop_signature_rename_notes()
    with pytest.MonkeyPatch.context() as patch:
      patch.setattr(export.ClassifierModule, "SINGLE_BATCH_EXECUTOR", None)
      export.export_saved_model(model, dirs["inline"], vocab, True, 32, ["0", "1"], False)
    notes.append(_rename_notes(messages.messages))
    export.export_saved_model(model, dirs["xla"], vocab, True, 32, ["0", "1"], False,
                              xla_one_row=True)
  finally:
    logger.removeHandler(messages)
    logger.filters[:] = filters
    absl_logging.set_verbosity(verbosity)
  return {"dirs": dirs, "notes": notes}


def _call_executors(export_dir):
  """{executor_type of every function call op in the saved functions}."""
  return {value.s.decode() for value in saved_call_attributes(export_dir, "executor_type")}


def test_the_single_batch_executor_is_in_the_saved_graph(exports):
  assert export.ClassifierModule.SINGLE_BATCH_EXECUTOR == "SINGLE_THREADED_EXECUTOR"
  assert "SINGLE_THREADED_EXECUTOR" in _call_executors(exports["dirs"]["executors"])
  assert "SINGLE_THREADED_EXECUTOR" not in _call_executors(exports["dirs"]["inline"])


def test_xla_one_row_replaces_the_single_batch_executor(exports):
  """One compiled call per signature (the one-row branch), none without xla_one_row."""
  assert xla_compiled_calls(exports["dirs"]["xla"]) == 3
  assert "SINGLE_THREADED_EXECUTOR" not in _call_executors(exports["dirs"]["xla"])
  assert xla_compiled_calls(exports["dirs"]["executors"]) == 0


@pytest.mark.parametrize("xla_one_row,rows,length", [
    (True, ["short"], 8), (True, ["short", "a little longer than short"], 7),
    (False, ["short"], 3)])
def test_one_row_lengths_round_up_for_xla(xla_one_row, rows, length):
  """What the classifier gets from the text signatures: a one-row batch padded to a multiple
  of 8 tokens for XLA (a compilation per multiple, not per length), else the longest row."""
  vocab = str(SAMPLE / "vocab.txt")
  with open(vocab, encoding="utf-8") as f:
    config = modeling.BertConfig(vocab_size=len(f.read().splitlines()), **TINY_CONFIG)
  module = export.ClassifierModule(modeling.build_classifier(config, 2), vocab, True, 32,
                                   ["0", "1"], False, vocab, xla_one_row=xla_one_row)
  module._outputs = lambda features: {name: t.shape for name, t in features.items()}
  shapes = module._serve_text(tf.constant(rows))
  assert shapes == {name: (len(rows), length) for name in modeling.INPUT_NAMES}


def test_scripts_log_no_signature_rename_note(exports):
  """TensorFlow notes, in a line of several KB per text signature, that it renames the
  captured inputs of the signature functions; under `cli.run`'s filter nothing of it is
  printed (the first export, unfiltered, shows the note is real)."""
  unfiltered, filtered = exports["notes"]
  assert len(unfiltered) == 3 and all(n.startswith("Function `_serve") for n in unfiltered)
  assert not filtered


@pytest.mark.parametrize("rows", [slice(0, 1), slice(1, 2), slice(0, 3)])
def test_outputs_equal_the_inline_export(exports, rows):
  """One row (the single-threaded executor, or XLA) and three (the default executor), all
  signatures (the ids one at max_seq_length, the text ones cut to the longest row)."""
  a, b = (tf.constant([p[i] for p in PAIRS[rows]]) for i in (0, 1))
  tokenizer = InGraphTokenizer(str(SAMPLE / "vocab.txt"), True)
  ids = tokenizer.pack(tokenizer.tokenize(a), tokenizer.tokenize(b), 32)
  got = {}
  for name, export_dir in exports["dirs"].items():
    signatures = tf.saved_model.load(export_dir).signatures
    got[name] = [signatures[export.SIGNATURE_TEXT_PAIR](text_a=a, text_b=b),
                 signatures[export.SIGNATURE_TEXT](text_a=a),
                 signatures[export.SIGNATURE_IDS](**ids)]
  for new in ("executors", "xla"):
    for got_new, old in zip(got[new], got["inline"]):
      np.testing.assert_allclose(got_new["probabilities"], old["probabilities"], atol=1e-6)
      assert got_new["label"].numpy().tolist() == old["label"].numpy().tolist()
