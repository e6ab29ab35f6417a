"""run_classifier beyond the default run: strategies, precision and XLA; the generic task
through the CLI; the regression export.

Runs that must agree start from one saved classifier checkpoint (head included) with
every dropout off, so they draw no random numbers: they differ only in float32 sums.
"""

import csv
import functools
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import classification
from classification import run
import modeling
from tests.test_run_classifier import REPO, SAMPLE, _options, _python, _slice_glue, _tiny_config

# The run's settings shared by the runs compared in this module: 600 train examples,
# int(600 / 16 * 0.5) = 18 steps; 150 dev examples.
EXACT = dict(train_batch_size=16, num_train_epochs=0.5, learning_rate=1e-3, do_eval=True,
             seed=1)


def _no_dropout_classifier():
  """build_classifier without the head's dropout (Google's fixed keep_prob 0.9)."""
  return functools.partial(modeling.build_classifier, dropout_rate=0.0)


def _trained_weights(output_dir):
  """{checkpoint key: array} of the model variables in output_dir's latest checkpoint."""
  reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(output_dir)))
  return {k: reader.get_tensor(k) for k in reader.get_variable_to_shape_map()
          if "OPTIMIZER_SLOT" not in k and k.startswith("bert_weights/")}


@pytest.fixture(scope="module")
def exact_job(tmp_path_factory):
  """Options of a dropout-free run from a saved checkpoint, and its one_device result."""
  tmp = tmp_path_factory.mktemp("exact")
  config = _tiny_config(tmp / "no_dropout.json", 2231, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0)
  tf_keras.utils.set_random_seed(1)
  model = modeling.build_classifier(modeling.BertConfig.from_json_file(config), 2, seq_length=32)
  init = modeling.new_checkpoint(model).save(str(tmp / "init" / "ckpt"))
  values = dict(_options(tmp, bert_config_file=config, init_checkpoint=init, **EXACT).__dict__)
  with pytest.MonkeyPatch.context() as patch:
    patch.setattr(modeling, "build_classifier", _no_dropout_classifier())
    done = run.run_classifier(run.ClassifierOptions(**dict(values, output_dir=str(tmp / "one"))))
  return dict(values=values, tmp=tmp, eval=done["eval"], weights=_trained_weights(tmp / "one"))


def test_mirrored_over_two_cpus_matches_one_device(exact_job):
  """Same global batch (2 x 8 vs 16): the same eval loss and weights up to float32 sums."""
  values = dict(exact_job["values"], output_dir=str(exact_job["tmp"] / "mirrored"),
                distribution_strategy="mirrored")
  code = f"""
import functools, json, sys
sys.path.insert(0, {REPO!r})
from training import strategy
strategy.split_cpu(2)
import tf_keras
import modeling
from classification import run
modeling.build_classifier = functools.partial(modeling.build_classifier, dropout_rate=0.0)
options = run.ClassifierOptions(**{values!r})
tf_keras.utils.set_random_seed(options.seed)  # as run.run_classifier
job = run.ClassifierRun(options)
done = job.run()
print(json.dumps(dict(done["eval"], replicas=job.strategy.num_replicas_in_sync,
                      strategy=type(job.strategy).__name__)))
"""
  got = json.loads(_python(code).strip().splitlines()[-1])
  assert (got.pop("strategy"), got.pop("replicas")) == ("MirroredStrategy", 2)
  want = exact_job["eval"]
  assert got["global_step"] == want["global_step"] == 18
  assert got["eval_loss"] == pytest.approx(want["eval_loss"], rel=1e-5)
  assert got["eval_accuracy"] == want["eval_accuracy"]
  weights = _trained_weights(values["output_dir"])
  # 5 embedding + 2 x 16 layer + 2 pooler + 2 classifier variables.
  assert set(weights) == set(exact_job["weights"]) and len(weights) == 41
  for key, value in exact_job["weights"].items():
    np.testing.assert_allclose(weights[key], value, rtol=1e-4, atol=1e-6, err_msg=key)


def test_xla_matches_no_xla(exact_job, monkeypatch):
  monkeypatch.setattr(modeling, "build_classifier", _no_dropout_classifier())
  values = dict(exact_job["values"], output_dir=str(exact_job["tmp"] / "xla"), use_xla=True)
  got = run.run_classifier(run.ClassifierOptions(**values))["eval"]
  want = exact_job["eval"]
  assert got["global_step"] == 18
  # XLA fuses and reorders float32 arithmetic in the gradients of 18 Adam steps.
  assert got["eval_loss"] == pytest.approx(want["eval_loss"], rel=1e-4)
  assert got["eval_accuracy"] == want["eval_accuracy"]
  for key, value in exact_job["weights"].items():
    np.testing.assert_allclose(_trained_weights(values["output_dir"])[key], value, rtol=1e-3,
                               atol=1e-5, err_msg=key)


def test_mixed_bfloat16_trains_and_exports_float32(tmp_path):
  options = _options(tmp_path, dtype="mixed_bfloat16", do_predict=True,
                     export_dir=str(tmp_path / "export"), predict_batch_size=16,
                     **dict(EXACT, num_train_epochs=0.25))
  done = run.run_classifier(options)
  assert sorted(done["eval"]) == ["eval_accuracy", "eval_loss", "global_step"]
  assert done["eval"]["global_step"] == 9
  assert math.isfinite(done["eval"]["eval_loss"]) and done["eval"]["eval_loss"] > 0
  # Variables stay float32 under the mixed policy (checkpoint and export).
  assert {v.dtype for v in _trained_weights(options.output_dir).values()} == {np.dtype("float32")}
  loaded = tf.saved_model.load(options.export_dir)
  with open(os.path.join(SAMPLE, "sentiment", "test.tsv"), encoding="utf-8") as f:
    texts = [line.rstrip("\n").split("\t")[1] for line in f][1:]
  served = loaded.signatures["serve_text"](text_a=tf.constant(texts))
  assert served["probabilities"].dtype == tf.float32 and served["probabilities"].shape == (100, 2)
  probabilities = served["probabilities"].numpy()
  np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-6)
  # The same bfloat16 computation as predict's, on the same tokens.
  np.testing.assert_allclose(probabilities, done["predict"], atol=1e-6)
  assert [l.decode() for l in served["label"].numpy()] == [
      str(i) for i in probabilities.argmax(axis=1)]
