"""run_classifier beyond the default run: strategies, precision and XLA; the generic task
through the CLI; STS-B regression and its export.

Runs that must agree start from one saved classifier checkpoint (head included) with
every dropout off (the config's and the head's fixed one), so they draw no random numbers:
they differ only in float32 sums.
"""

import csv
import dataclasses
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
from tests.classifier_jobs import classifier_options, google_tiny_options
from tests.paths import REPO, SAMPLE
from tests.processes import run_python
from tests.tiny_models import checkpoint_weights, tiny_config_file

# The run's settings shared by the runs compared in this module: 600 train examples,
# int(600 / 16 * 0.5) = 18 steps; 150 dev examples.
EXACT = dict(train_batch_size=16, num_train_epochs=0.5, learning_rate=1e-3, do_eval=True,
             seed=1)


def _no_dropout_classifier():
  """build_classifier without the head's dropout (Google's fixed keep_prob 0.9)."""
  return functools.partial(modeling.build_classifier, dropout_rate=0.0)


@pytest.fixture(scope="module")
def exact_job(tmp_path_factory):
  """Options of a dropout-free run from a saved checkpoint, and its one_device result."""
  tmp = tmp_path_factory.mktemp("exact")
  config = tiny_config_file(tmp / "no_dropout.json", 2231, hidden_dropout_prob=0.0,
                            attention_probs_dropout_prob=0.0)
  tf_keras.utils.set_random_seed(1)
  model = modeling.build_classifier(modeling.BertConfig.from_json_file(config), 2, seq_length=32)
  init = modeling.new_checkpoint(model).save(str(tmp / "init" / "ckpt"))
  values = dict(classifier_options(tmp, bert_config_file=config, init_checkpoint=init,
                                   **EXACT).__dict__)
  with pytest.MonkeyPatch.context() as patch:
    patch.setattr(modeling, "build_classifier", _no_dropout_classifier())
    done = run.run_classifier(run.ClassifierOptions(**dict(
        values, output_dir=str(tmp / "one"), do_predict=True)))
  return dict(values=values, tmp=tmp, eval=done["eval"], predict=done["predict"],
              weights=checkpoint_weights(tmp / "one"))


@pytest.mark.slow
@pytest.mark.multiprocess
def test_mirrored_over_two_cpus_matches_one_device(exact_job):
  """Same global batch (2 x 8 vs 16): the same eval loss and weights up to float32 sums.

  Eval and predict batches of 2 and 3 per replica: 75 dev batches (the last step feeds one
  replica only), 100 + 2 padding test examples; outputs must come back in example order.
  """
  values = dict(exact_job["values"], output_dir=str(exact_job["tmp"] / "mirrored"),
                distribution_strategy="mirrored", eval_batch_size=4, do_predict=True,
                predict_batch_size=6)
  code = f"""
import functools, json, sys
sys.path.insert(0, {str(REPO)!r})
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
                      strategy=type(job.strategy).__name__,
                      predict=done["predict"].tolist())))
"""
  got = json.loads(run_python(code).strip().splitlines()[-1])
  assert (got.pop("strategy"), got.pop("replicas")) == ("MirroredStrategy", 2)
  want = exact_job["eval"]
  assert got["global_step"] == want["global_step"] == 18
  assert got["eval_loss"] == pytest.approx(want["eval_loss"], rel=1e-5)
  assert got["eval_accuracy"] == want["eval_accuracy"]
  np.testing.assert_allclose(got["predict"], exact_job["predict"], rtol=1e-5, atol=1e-6)
  weights = checkpoint_weights(values["output_dir"])
  # 5 embedding + 2 x 16 layer + 2 pooler + 2 classifier variables.
  assert set(weights) == set(exact_job["weights"]) and len(weights) == 41
  # Training moved weights by up to ~3e-2 (check below); the strategies agree to ~1e-6.
  for key, value in exact_job["weights"].items():
    np.testing.assert_allclose(weights[key], value, rtol=1e-4, atol=5e-6, err_msg=key)
  init = tf.train.load_checkpoint(values["init_checkpoint"])
  assert max(np.abs(init.get_tensor(k) - v).max() for k, v in weights.items()) > 1e-2


@pytest.mark.slow
def test_xla_matches_no_xla(exact_job, monkeypatch):
  monkeypatch.setattr(modeling, "build_classifier", _no_dropout_classifier())
  values = dict(exact_job["values"], output_dir=str(exact_job["tmp"] / "xla"), use_xla=True)
  got = run.run_classifier(run.ClassifierOptions(**values))["eval"]
  want = exact_job["eval"]
  assert got["global_step"] == 18
  # XLA fuses and reorders the float32 arithmetic of the gradients (~5e-7 apart here).
  assert got["eval_loss"] == pytest.approx(want["eval_loss"], rel=1e-5)
  assert got["eval_accuracy"] == want["eval_accuracy"]
  weights = checkpoint_weights(values["output_dir"])
  for key, value in exact_job["weights"].items():
    np.testing.assert_allclose(weights[key], value, rtol=1e-4, atol=5e-6, err_msg=key)


@pytest.mark.slow
def test_mixed_bfloat16_trains_and_exports_float32(tmp_path):
  options = classifier_options(tmp_path, dtype="mixed_bfloat16", do_predict=True,
                               export_dir=str(tmp_path / "export"), predict_batch_size=16,
                               **dict(EXACT, num_train_epochs=0.25))
  done = run.run_classifier(options)
  assert sorted(done["eval"]) == ["eval_accuracy", "eval_loss", "global_step", "loss"]
  assert done["eval"]["global_step"] == 9
  assert math.isfinite(done["eval"]["eval_loss"]) and done["eval"]["eval_loss"] > 0
  # Variables stay float32 under the mixed policy.
  assert {v.dtype for v in checkpoint_weights(options.output_dir).values()} == {
      np.dtype("float32")}
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
  # An eval-only run with the same flags evaluates the checkpoint in the same precision.
  again = run.run_classifier(dataclasses.replace(options, do_train=False, do_predict=False,
                                                 export_dir=None))
  assert again["eval"] == done["eval"]


GENERIC_LABELS = ["neg", "neutral", "pos"]  # sorted as discovered from train.csv


def _write_csv(path, header, rows):
  with open(path, "w", encoding="utf-8", newline="") as f:
    csv.writer(f).writerows([header, *rows])


def _generic_data(data_dir):
  """train/dev/test.csv: label first, then the review, then a source; fields with commas
  and quotes are quoted. Returns the test reviews."""
  os.makedirs(data_dir)
  with open(os.path.join(SAMPLE, "sentiment", "train.tsv"), encoding="utf-8") as f:
    labelled = [line.rstrip("\n").split("\t") for line in f][1:65]
  rows = []
  for i, (text, label) in enumerate(labelled):
    if i % 5 == 0:
      text = f'"{text}", she said, "really."'
    label = "neutral" if i % 4 == 3 else ("pos" if label == "1" else "neg")
    rows.append([label, text, "web, mobile" if i % 2 else "store"])
  assert sum("," in r[1] for r in rows) > 10 and sum('"' in r[1] for r in rows) > 10
  _write_csv(os.path.join(data_dir, "train.csv"), ["label", "review", "source"], rows[:48])
  _write_csv(os.path.join(data_dir, "dev.csv"), ["label", "review", "source"], rows[48:])
  with open(os.path.join(SAMPLE, "sentiment", "test.tsv"), encoding="utf-8") as f:
    tests = [line.rstrip("\n").split("\t")[1] for line in f][1:12]
  tests[0] = f'"{tests[0]}", he wrote, "truly."'
  _write_csv(os.path.join(data_dir, "test.csv"), ["id", "review", "source"],
             [[str(i), text, "web, mobile"] for i, text in enumerate(tests)])
  return tests


@pytest.fixture(scope="module")
def generic_run(tmp_path_factory):
  """The CLI on our own CSV files: train, eval, predict and export."""
  tmp = tmp_path_factory.mktemp("generic")
  tests = _generic_data(str(tmp / "data"))
  output_dir, export_dir = tmp / "out", tmp / "export"
  command = [sys.executable, os.path.join(REPO, "run_classifier.py"), "--task_name=generic",
             "--text_a_column=review", "--label_column=label", f"--data_dir={tmp / 'data'}",
             f"--vocab_file={SAMPLE}/vocab.txt",
             f"--bert_config_file={tiny_config_file(tmp / 'bert_config.json', 2231)}",
             f"--output_dir={output_dir}", f"--export_dir={export_dir}", "--do_train",
             "--do_eval", "--do_predict", "--max_seq_length=32", "--train_batch_size=8",
             "--num_train_epochs=1", "--learning_rate=1e-3", "--predict_batch_size=4",
             "--seed=1"]
  out = subprocess.run(command, capture_output=True, text=True, check=False,
                       env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  assert out.returncode == 0, out.stderr[-3000:]
  return dict(output_dir=str(output_dir), export_dir=str(export_dir), tests=tests)


@pytest.mark.slow
@pytest.mark.multiprocess
def test_generic_csv_outputs(generic_run):
  output_dir = generic_run["output_dir"]
  with open(os.path.join(output_dir, "label_list.json"), encoding="utf-8") as f:
    assert json.load(f) == {"labels": GENERIC_LABELS, "is_regression": False}
  with open(os.path.join(output_dir, "eval_results.txt")) as f:
    results = dict(line.rstrip("\n").split(" = ") for line in f)
  assert sorted(results) == ["eval_accuracy", "eval_loss", "global_step", "loss"]
  assert results["global_step"] == "6"  # int(48 / 8 * 1)
  # 16 dev examples: accuracy is a multiple of 1/16.
  assert float(results["eval_accuracy"]) * 16 == pytest.approx(
      round(float(results["eval_accuracy"]) * 16), abs=1e-5)
  assert math.isfinite(float(results["eval_loss"])) and float(results["eval_loss"]) > 0
  with open(os.path.join(output_dir, "test_results.tsv")) as f:
    lines = f.read().splitlines()
  # 11 test rows (one padding example of the last batch of 4 dropped), 3 probabilities each.
  assert len(lines) == 11 and all(len(line.split("\t")) == 3 for line in lines)
  probabilities = np.array([[float(v) for v in line.split("\t")] for line in lines])
  np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-5)


@pytest.mark.slow
@pytest.mark.multiprocess
def test_generic_export_serves_label_names_in_a_fresh_process(generic_run):
  code = f"""
import json
import tensorflow as tf
import tensorflow_text
m = tf.saved_model.load({generic_run['export_dir']!r})
out = m.signatures["serve_text"](text_a=tf.constant({generic_run['tests']!r}))
print(json.dumps({{"probabilities": out["probabilities"].numpy().tolist(),
                  "labels": [l.decode() for l in out["label"].numpy()]}}))
"""
  got = json.loads(run_python(code).strip().splitlines()[-1])
  expected = np.loadtxt(os.path.join(generic_run["output_dir"], "test_results.tsv"),
                        delimiter="\t")
  np.testing.assert_allclose(got["probabilities"], expected, atol=1e-5)
  assert got["labels"] == [GENERIC_LABELS[i] for i in expected.argmax(axis=1)]


def test_generic_csv_row_with_a_wrong_field_count(tmp_path):
  data = tmp_path / "data"
  _generic_data(str(data))
  with open(data / "train.csv", "a", encoding="utf-8") as f:
    f.write("pos,Good, but unquoted,store\n")  # line 50: 4 fields under a 3-column header
  task = dict(text_a_column="review", label_column="label")
  with pytest.raises(classification.DataFormatError,
                     match=r"data/train\.csv, line 50: 4 columns, expected 3"):
    run.run_classifier(classifier_options(tmp_path, task_name="generic", data_dir=str(data),
                                          task_options=task))


@pytest.mark.slow
@pytest.mark.multiprocess
def test_stsb_regression_and_its_export_returns_scores(shared_dir, tmp_path):
  """STS-B: Pearson/Spearman eval, one score per test row; each signature of the export
  returns only `score`, one float per example, equal to predict's."""
  options = google_tiny_options(shared_dir, tmp_path, "sts-b", "STS-B", 20, max_seq_length=32,
                                do_eval=True, do_predict=True,
                                export_dir=str(tmp_path / "export"))
  done = run.run_classifier(options)
  assert set(done["eval"]) == {"eval_pearson", "eval_spearman", "eval_loss", "global_step", "loss"}
  assert done["eval"]["global_step"] == 2
  with open(tmp_path / "out" / "test_results.tsv") as f:
    lines = f.read().splitlines()
  assert len(lines) == 20 and all(len(line.split("\t")) == 1 for line in lines)
  np.testing.assert_allclose([float(l) for l in lines], done["predict"], rtol=1e-6)
  assert classification.load_label_list(str(tmp_path / "out")) == ([], True)
  examples = classification.get_processor("sts-b").get_test_examples(options.data_dir)
  pairs = [[e.text_a for e in examples], [e.text_b for e in examples]]
  code = f"""
import json
import tensorflow as tf
import tensorflow_text
m = tf.saved_model.load({options.export_dir!r})
pair = m.signatures["serve_text_pair"](text_a=tf.constant({pairs[0]!r}),
                                      text_b=tf.constant({pairs[1]!r}))
single = m.signatures["serve_text"](text_a=tf.constant({pairs[0]!r}))
print(json.dumps({{
    "keys": {{name: sorted(m.signatures[name].structured_outputs) for name in m.signatures}},
    "dtype": pair["score"].dtype.name, "shape": pair["score"].shape.as_list(),
    "pair": pair["score"].numpy().tolist(), "single": single["score"].numpy().tolist()}}))
"""
  got = json.loads(run_python(code).strip().splitlines()[-1])
  assert got["keys"] == {"serving_default": ["score"], "serve_text": ["score"],
                         "serve_text_pair": ["score"]}
  assert got["dtype"] == "float32" and got["shape"] == [20]
  np.testing.assert_allclose(got["pair"], [float(l) for l in lines], atol=1e-5)
  np.testing.assert_allclose(got["pair"], done["predict"], atol=1e-5)
  # text_b matters: a single-segment input scores differently.
  assert np.abs(np.subtract(got["single"], got["pair"])).max() > 1e-3
  with open(tmp_path / "export" / "assets" / "label_list.json", encoding="utf-8") as f:
    assert json.load(f) == {"labels": [], "is_regression": True}
