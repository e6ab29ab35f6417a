"""run_classifier end to end on tiny models.

The CLI on sample_data/sentiment: Google's output files; the export reloaded in a process
that imports only tensorflow and tensorflow_text, its signatures equal to the Keras model;
saved_model_cli; a rerun resumes. Warm starts from the MiniLM HF directory and Google's tiny
checkpoint; bad inputs (STS-B regression: test_classification_run_modes.py).
"""

import dataclasses
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import classification
from classification import run
import cli
import fileio
import modeling
from tests.classifier_jobs import (classifier_options, google_tiny_options, slice_glue,
                                   xla_compiled_calls)
from tests.paths import REPO, SAMPLE
from tests.processes import run_python
from tests.tiny_models import (TINY_CONFIG, checkpoint_word_embeddings, minilm_word_embeddings,
                               tiny_config_file)
import tokenization
from training import task as task_lib

SAVED_MODEL_CLI = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
TEXTS = ["A wonderful film, I loved every minute of it.", "The soup was cold and the staff rude.",
         "Überraschend gut!", ""]


@pytest.fixture(scope="module")
def sentiment_run(tmp_path_factory):
  """The CLI: train, eval, predict and export a tiny random-init model on sample_data/sentiment."""
  tmp = tmp_path_factory.mktemp("sentiment")
  config = tiny_config_file(tmp / "bert_config.json", 2231)
  output_dir, export_dir = tmp / "out", tmp / "export"
  command = [sys.executable, os.path.join(REPO, "run_classifier.py"), "--task_name=SST-2",
             f"--data_dir={SAMPLE}/sentiment", f"--vocab_file={SAMPLE}/vocab.txt",
             f"--bert_config_file={config}", f"--output_dir={output_dir}",
             f"--export_dir={export_dir}", "--do_train", "--do_eval", "--do_predict",
             "--max_seq_length=32", "--train_batch_size=16", "--num_train_epochs=2",
             "--learning_rate=1e-3", "--log_steps=10", "--seed=1", "--predict_batch_size=7"]
  out = subprocess.run(command, capture_output=True, text=True, check=False,
                       env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  assert out.returncode == 0, out.stderr[-3000:]
  return dict(output_dir=str(output_dir), export_dir=str(export_dir), config=config,
              log=out.stderr)


@pytest.mark.slow
@pytest.mark.multiprocess
def test_outputs_like_google(sentiment_run):
  output_dir = sentiment_run["output_dir"]
  for name in ("train.tf_record", "eval.tf_record", "predict.tf_record", "label_list.json",
               "model.ckpt-75.index"):
    assert os.path.exists(os.path.join(output_dir, name)), name
  with open(os.path.join(output_dir, "eval_results.txt")) as f:
    results = dict(line.rstrip("\n").split(" = ") for line in f)
  assert sorted(results) == ["eval_accuracy", "eval_loss", "global_step", "loss"]
  assert results["global_step"] == "75"  # int(600 / 16 * 2)
  assert 0.5 < float(results["eval_accuracy"]) <= 1.0 and float(results["eval_loss"]) > 0
  probabilities = np.loadtxt(os.path.join(output_dir, "test_results.tsv"), delimiter="\t")
  assert probabilities.shape == (100, 2)  # 100 test examples; 5 padding outputs dropped
  np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-5)
  assert "examples_per_second" in sentiment_run["log"]
  assert classification.load_label_list(output_dir) == (["0", "1"], False)


@pytest.mark.slow
@pytest.mark.multiprocess
def test_saved_model_cli_lists_the_signatures(sentiment_run):
  out = subprocess.run([SAVED_MODEL_CLI, "show", "--all", "--dir", sentiment_run["export_dir"]],
                       capture_output=True, text=True, check=True).stdout
  for name in ("serving_default", "serve_text", "serve_text_pair"):
    assert f"signature_def['{name}']" in out
  for name in ("input_ids", "input_mask", "segment_ids", "text_a", "text_b", "probabilities",
               "label"):
    assert f"['{name}']" in out
  assert sorted(os.listdir(os.path.join(sentiment_run["export_dir"], "assets"))) == [
      "label_list.json", "vocab.txt"]


@pytest.mark.slow
@pytest.mark.multiprocess
def test_export_answers_raw_text_in_a_fresh_process(sentiment_run):
  """Only tensorflow + tensorflow_text imported; both signatures match the Keras model."""
  vocab = os.path.join(SAMPLE, "vocab.txt")
  tokenizer = tokenization.FullTokenizer(vocab, do_lower_case=True)
  examples = [classification.InputExample(str(i), t, None, "0") for i, t in enumerate(TEXTS)]
  features = classification.convert_examples_to_features(examples, ["0", "1"], 32, tokenizer)
  ids = {k: [getattr(f, k) for f in features] for k in ("input_ids", "input_mask", "segment_ids")}
  code = f"""
import json, sys
import tensorflow as tf
import tensorflow_text
m = tf.saved_model.load({sentiment_run['export_dir']!r})
text = m.signatures["serve_text"](text_a=tf.constant({TEXTS!r}))
pair = m.signatures["serve_text_pair"](text_a=tf.constant({TEXTS!r}),
                                      text_b=tf.constant([""] * {len(TEXTS)}))
ids = {{k: tf.constant(v, tf.int32) for k, v in {ids!r}.items()}}
by_ids = m.signatures["serving_default"](**ids)
ours = [k for k in sys.modules if k.split(".")[0] in ("tf_keras", "modeling", "tokenization",
                                                      "classification", "training")]
print(json.dumps({{"text": text["probabilities"].numpy().tolist(),
                  "pair": pair["probabilities"].numpy().tolist(),
                  "ids": by_ids["probabilities"].numpy().tolist(),
                  "labels": [l.decode() for l in text["label"].numpy()], "modules": ours}}))
"""
  got = json.loads(run_python(code).strip().splitlines()[-1])
  assert got["modules"] == []
  config = modeling.BertConfig.from_json_file(sentiment_run["config"])
  model = modeling.build_classifier(config, 2, seq_length=32)
  modeling.load_checkpoint(model, sentiment_run["output_dir"])
  logits = model({k: tf.constant(v, tf.int32) for k, v in ids.items()}, training=False)
  expected = tf.nn.softmax(logits).numpy()
  for key in ("text", "pair", "ids"):
    np.testing.assert_allclose(got[key], expected, atol=1e-5, err_msg=key)
  assert got["labels"] == [str(i) for i in expected.argmax(axis=1)]


@pytest.mark.slow
@pytest.mark.multiprocess
def test_export_xla_answers_one_row_like_the_model(sentiment_run, tmp_path):
  """--export_xla without --do_train exports the trained checkpoint; in a fresh process, each
  text alone (the XLA-compiled branch) gets the Keras model's probabilities."""
  export_dir = tmp_path / "xla"
  subprocess.run([sys.executable, os.path.join(REPO, "run_classifier.py"), "--task_name=SST-2",
                  f"--data_dir={SAMPLE}/sentiment", f"--vocab_file={SAMPLE}/vocab.txt",
                  f"--output_dir={sentiment_run['output_dir']}", "--max_seq_length=32",
                  f"--export_dir={export_dir}", "--export_xla"], check=True,
                 capture_output=True)
  assert xla_compiled_calls(export_dir) == 3  # one per signature
  assert xla_compiled_calls(sentiment_run["export_dir"]) == 0
  code = f"""
import json
import tensorflow as tf
import tensorflow_text
serve = tf.saved_model.load({str(export_dir)!r}).signatures["serve_text"]
print(json.dumps([serve(text_a=tf.constant([t]))["probabilities"].numpy()[0].tolist()
                  for t in {TEXTS!r}]))
"""
  got = json.loads(run_python(code).strip().splitlines()[-1])
  tokenizer = tokenization.FullTokenizer(os.path.join(SAMPLE, "vocab.txt"), do_lower_case=True)
  examples = [classification.InputExample(str(i), t, None, "0") for i, t in enumerate(TEXTS)]
  features = classification.convert_examples_to_features(examples, ["0", "1"], 32, tokenizer)
  model = modeling.build_classifier(modeling.BertConfig.from_json_file(sentiment_run["config"]),
                                    2, seq_length=32)
  modeling.load_checkpoint(model, sentiment_run["output_dir"])
  logits = model({k: tf.constant([getattr(f, k) for f in features], tf.int32)
                  for k in ("input_ids", "input_mask", "segment_ids")}, training=False)
  np.testing.assert_allclose(got, tf.nn.softmax(logits).numpy(), atol=1e-5)


@pytest.mark.slow
@pytest.mark.multiprocess
def test_rerun_resumes_and_evaluates_the_checkpoint(sentiment_run, tmp_path):
  """Training again in the same output_dir has nothing to do; eval reads the checkpoint."""
  options = run.ClassifierOptions(
      task_name="sst-2", data_dir=os.path.join(SAMPLE, "sentiment"),
      vocab_file=os.path.join(SAMPLE, "vocab.txt"), output_dir=sentiment_run["output_dir"],
      bert_config_file=sentiment_run["config"], max_seq_length=32, do_train=True, do_eval=True,
      train_batch_size=16, num_train_epochs=2)
  with open(os.path.join(sentiment_run["output_dir"], "eval_results.txt")) as f:
    before = f.read()
  done = run.run_classifier(options)
  assert done["train"] == {}
  assert done["eval"]["global_step"] == 75
  with open(os.path.join(sentiment_run["output_dir"], "eval_results.txt")) as f:
    assert f.read() == before


@pytest.mark.slow
def test_warm_start_from_minilm_huggingface_dir(minilm_dir, shared_dir, tmp_path):
  """No bert_config_file: the HF config.json is used; a learning rate of 1e-30 (0 is refused)
  moves no float32 weight, so MiniLM's weights are kept."""
  minilm_dir = str(minilm_dir)
  data = slice_glue(shared_dir, "SST-2", str(tmp_path / "data"), 8)  # one step: 8 rows, batch 8
  options = run.ClassifierOptions(
      task_name="sst-2", data_dir=data, vocab_file=os.path.join(minilm_dir, "vocab.txt"),
      output_dir=str(tmp_path / "out"), init_checkpoint=minilm_dir, max_seq_length=32,
      do_train=True, do_eval=True, train_batch_size=8, num_train_epochs=1, learning_rate=1e-30,
      seed=1)
  done = run.run_classifier(options)
  assert done["eval"]["global_step"] == 1
  assert set(done["eval"]) == {"eval_accuracy", "eval_loss", "global_step", "loss"}
  np.testing.assert_array_equal(checkpoint_word_embeddings(str(tmp_path / "out"), 30522),
                                minilm_word_embeddings(minilm_dir))


@pytest.mark.slow
def test_warm_start_from_google_checkpoint_on_pairs(shared_dir, tmp_path):
  tiny = shared_dir / "fixtures" / "google_bert_tiny"
  options = google_tiny_options(shared_dir, tmp_path, "mrpc", "MRPC", 16,
                                bert_config_file=str(tiny / "bert_config.json"),
                                max_seq_length=48, do_eval=True, learning_rate=1e-30)
  done = run.run_classifier(options)
  assert set(done["eval"]) == {"eval_accuracy", "eval_f1", "eval_loss", "global_step", "loss"}
  expected = tf.train.load_checkpoint(str(tiny / "bert_model.ckpt")).get_tensor(
      "bert/embeddings/word_embeddings")
  np.testing.assert_array_equal(checkpoint_word_embeddings(str(tmp_path / "out"), 30522), expected)


def test_unknown_task(tmp_path):
  with pytest.raises(ValueError, match=r"unknown task_name 'glue-9'; known tasks: cola, "):
    run.run_classifier(classifier_options(tmp_path, task_name="glue-9"))


def test_missing_data_file(tmp_path):
  (tmp_path / "data").mkdir()
  with pytest.raises(fileio.InputError, match=r"data file .*data/train\.tsv: not found"):
    run.run_classifier(classifier_options(tmp_path, data_dir=str(tmp_path / "data")))


def test_aug_train_examples_are_written_in_a_seeded_random_order(tmp_path):
  """augment_data.py writes each sentence's variants together: with aug_train the training
  examples, and train.tf_record, are in a random order seeded by --seed (0 without), which the
  pipeline's 100-record shuffle buffer then only perturbs; the training file stays in file
  order (Google's)."""
  data = tmp_path / "data"
  data.mkdir()
  header, *rows = (SAMPLE / "sentiment" / "train.tsv").read_text().splitlines(keepends=True)
  for name in ("train.tsv", "train_aug.tsv"):
    (data / name).write_text(header + "".join(rows[:40]))
  in_file = [row.split("\t")[0] for row in rows[:40]]

  def job(name, **kwargs):
    (tmp_path / name).mkdir()
    return run.ClassifierRun(classifier_options(tmp_path / name, data_dir=str(data), **kwargs))

  def order(name, **kwargs):
    return [example.text_a for example in job(name, **kwargs).train_examples()]
  assert order("plain", seed=3) == in_file
  shuffled = order("seed3", aug_train=True, seed=3)
  assert sorted(shuffled) == sorted(in_file) and shuffled != in_file
  assert order("again", aug_train=True, seed=3) == shuffled
  assert order("seed4", aug_train=True, seed=4) != shuffled
  assert order("unseeded", aug_train=True) == order("seed0", aug_train=True, seed=0)
  # The records follow the examples' order.
  written = job("written", aug_train=True, seed=3)
  written.prepare_training(1.0)
  records = [tf.train.Example.FromString(r).features.feature["input_ids"].int64_list.value
             for r in tf.data.TFRecordDataset(written.task.record_files[task_lib.TRAIN])
             .as_numpy_iterator()]
  tokenizer = written.tokenizer
  expected = [tokenizer.convert_tokens_to_ids(["[CLS]", *tokenizer.tokenize(text)[:30], "[SEP]"])
              for text in shuffled]
  assert len(records) == len(expected)
  assert [list(r[:len(e)]) for r, e in zip(records, expected)] == expected


def test_vocab_size_mismatch(shared_dir, tmp_path):
  tiny = shared_dir / "fixtures" / "google_bert_tiny"
  with pytest.raises(ValueError, match=r"vocab\.txt has 2231 tokens but the model config .* "
                                       r"has vocab_size 30522"):
    run.run_classifier(classifier_options(tmp_path,
                                          init_checkpoint=str(tiny / "bert_model.ckpt"),
                                          bert_config_file=str(tiny / "bert_config.json")))


@pytest.mark.parametrize("flag, value", [("train_batch_size", 0), ("learning_rate", 0.0),
                                         ("learning_rate", float("nan")),
                                         ("num_train_epochs", -1.0), ("eval_batch_size", -8)])
def test_bad_numbers_are_refused_before_any_work(tmp_path, flag, value):
  with pytest.raises(ValueError, match=f"--{flag} must be positive, got {value}"):
    classifier_options(tmp_path, **{flag: value})
  assert not (tmp_path / "out").exists()


def test_nothing_to_do(tmp_path):
  with pytest.raises(ValueError, match="at least one of do_train"):
    run.run_classifier(classifier_options(tmp_path, do_train=False))


def test_eval_without_any_weights(tmp_path):
  with pytest.raises(ValueError, match="no checkpoint in output_dir .* and no --init_checkpoint"):
    run.run_classifier(classifier_options(tmp_path, do_train=False, do_eval=True))


def _our_export_layout(directory):
  """The files that mark a SavedModel written by run_classifier (contents do not matter here)."""
  (directory / "variables").mkdir(parents=True)
  (directory / "assets").mkdir()
  (directory / "saved_model.pb").write_bytes(b"")
  (directory / "assets" / "label_list.json").write_text("{}")


def test_export_dir_that_is_not_ours_is_refused_and_untouched(tmp_path):
  """A typo'd --export_dir (here: a directory of the user's files) is never replaced."""
  mine = tmp_path / "home"
  mine.mkdir()
  (mine / "notes.txt").write_text("keep me")
  with pytest.raises(cli.FlagError, match=r"--export_dir '.*home' exists and is not a "
                     r"SavedModel written by run_classifier: nothing was touched"):
    run.run_classifier(classifier_options(tmp_path, export_dir=str(mine)))
  assert os.listdir(mine) == ["notes.txt"] and not (tmp_path / "out").exists()
  (tmp_path / "file").write_text("x")
  with pytest.raises(cli.FlagError, match="is a file, not a directory"):
    run.run_classifier(classifier_options(tmp_path, export_dir=str(tmp_path / "file")))


def test_missing_init_checkpoint_is_refused_before_any_work(tmp_path):
  """A typo'd --init_checkpoint (and no checkpoint in output_dir to resume from): refused
  before the training records are written or a model is built."""
  with pytest.raises(modeling.CheckpointNotFoundError, match=r"no checkpoint at '.*nothing'"):
    run.run_classifier(classifier_options(tmp_path, init_checkpoint=str(tmp_path / "nothing")))
  assert not (tmp_path / "out").exists()


def test_export_dir_under_a_file_is_refused_before_training(tmp_path):
  """A file where a folder of a new --export_dir's path should be: the OSError the export
  would meet after training (naming the file), at once; the file kept."""
  (tmp_path / "notes.txt").write_text("keep me")
  with pytest.raises(NotADirectoryError) as raised:
    run.run_classifier(classifier_options(tmp_path,
                                          export_dir=str(tmp_path / "notes.txt" / "a" / "export")))
  assert raised.value.filename == str(tmp_path / "notes.txt")
  assert not (tmp_path / "out").exists() and (tmp_path / "notes.txt").read_text() == "keep me"


def test_export_dir_on_a_read_only_file_system_is_refused_before_training(tmp_path,
                                                                          monkeypatch):
  """A new --export_dir whose folder is on a read-only file system (statvfs says so; the error
  table's export-dir-read-only mounts a real one): its OSError at once, before training."""
  statvfs = os.statvfs
  monkeypatch.setattr(os, "statvfs", lambda path: os.statvfs_result(
      (*statvfs(path)[:8], os.ST_RDONLY, statvfs(path)[9])) if path == str(tmp_path / "ro")
                      else statvfs(path))
  (tmp_path / "ro").mkdir()
  with pytest.raises(OSError, match="Read-only file system") as raised:
    run.run_classifier(classifier_options(tmp_path, export_dir=str(tmp_path / "ro" / "export")))
  assert raised.value.filename == str(tmp_path / "ro" / "export")
  assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("export", ["out", "out/export", "."])
def test_export_dir_overlapping_output_dir_is_refused_before_training(tmp_path, export):
  """Equal to, inside or containing output_dir: the checkpoints would go with the export."""
  with pytest.raises(cli.FlagError, match="overlaps --output_dir .* would delete the run's "
                     "checkpoints and results"):
    run.run_classifier(classifier_options(tmp_path, export_dir=str(tmp_path / export)))
  assert not (tmp_path / "out").exists()


def test_our_export_is_replaced_only_with_overwrite_export(tmp_path):
  _our_export_layout(tmp_path / "export")
  with pytest.raises(cli.FlagError, match="holds a SavedModel: pass --overwrite_export"):
    run.run_classifier(classifier_options(tmp_path, export_dir=str(tmp_path / "export")))
  from classification import export  # pylint: disable=import-outside-toplevel
  export.check_export_dir(str(tmp_path / "export"), str(tmp_path / "out"), overwrite=True)
  export.check_export_dir(str(tmp_path / "new"), str(tmp_path / "out"), overwrite=False)
  (tmp_path / "empty").mkdir()
  export.check_export_dir(str(tmp_path / "empty"), str(tmp_path / "out"), overwrite=False)


@pytest.mark.slow
@pytest.mark.slow
def test_every_path_on_a_tensorflow_file_system(tmp_path, monkeypatch):
  """All inputs and outputs on ram:// (standing in for gs://): nothing is written locally."""
  def copy(source, target):
    tf.io.gfile.makedirs(os.path.dirname(target))
    tf.io.gfile.copy(str(source), target, overwrite=True)

  root = "ram://classifier_e2e"
  copy(SAMPLE / "vocab.txt", f"{root}/model/vocab.txt")
  with tf.io.gfile.GFile(f"{root}/model/bert_config.json", "w") as f:
    f.write(json.dumps(dict(TINY_CONFIG, vocab_size=2231)))
  for split in ("train", "dev", "test"):
    with open(SAMPLE / "sentiment" / f"{split}.tsv", "rb") as f:
      rows = f.readlines()[:41]
    with tf.io.gfile.GFile(f"{root}/data/{split}.tsv", "wb") as f:
      f.write(b"".join(rows))
  monkeypatch.chdir(tmp_path)
  options = run.ClassifierOptions(
      task_name="sst-2", data_dir=f"{root}/data", vocab_file=f"{root}/model/vocab.txt",
      bert_config_file=f"{root}/model/bert_config.json",
      # No export_dir: a SavedModel replaces the old one by a directory rename, and ram:// renames
      # the directory entry without its files (gs:// moves them); see fileio.atomic_directory.
      # A tiny random-init model: the paths are under test, and checkpoints of a larger one
      # take long to write to ram://.
      output_dir=f"{root}/out", do_train=True, do_eval=True, do_predict=True, max_seq_length=32,
      train_batch_size=8, num_train_epochs=1, seed=1)
  done = run.run_classifier(options)

  assert os.listdir(tmp_path) == []
  out = tf.io.gfile.listdir(f"{root}/out")
  for name in ("train.tf_record", "eval.tf_record", "predict.tf_record", "label_list.json",
               "eval_results.txt", "test_results.tsv", "model.ckpt-5.index", "checkpoint"):
    assert name in out, (name, out)
  with tf.io.gfile.GFile(f"{root}/out/eval_results.txt") as f:
    assert "global_step = 5\n" in f.read()
  with tf.io.gfile.GFile(f"{root}/out/test_results.tsv") as f:
    assert len(f.read().splitlines()) == 40
  assert done["eval"]["global_step"] == 5
  # The rerun resumes from ram:// (no training left) and reuses the cached records.
  again = run.run_classifier(dataclasses.replace(options, do_predict=False))
  assert again["eval"] == done["eval"]
  tf.io.gfile.rmtree(root)
