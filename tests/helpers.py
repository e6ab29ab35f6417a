"""What several test modules share: paths, tiny BERT models and configs, the trainers' data
and options, the training loop's toy job, and helpers for tests that run subprocesses."""

import errno
import io
import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import tensorflow as tf
import tf_keras

from classification import run as classification_run
import modeling
import pretraining
from pretraining_data import pipeline
from squad import read_squad_examples
from training import loop
from training import optimizer as optimizer_lib

REPO = pathlib.Path(__file__).resolve().parent.parent
SAMPLE = REPO / "sample_data"
SHARED = REPO.parent / "shared"

# --- tiny BERT models and configs -------------------------------------------------------------

# A model to build in process: vocab 99, L=2, H=32.
TINY_BERT = modeling.BertConfig(vocab_size=99, hidden_size=32, num_hidden_layers=2,
                                num_attention_heads=4, intermediate_size=37, type_vocab_size=2,
                                max_position_embeddings=64)
# The fields of the trainers' bert_config.json but vocab_size: L=2, H=64, 64 positions.
TINY_CONFIG = dict(attention_probs_dropout_prob=0.1, hidden_act="gelu", hidden_dropout_prob=0.1,
                   hidden_size=64, initializer_range=0.02, intermediate_size=128,
                   max_position_embeddings=64, num_attention_heads=2, num_hidden_layers=2,
                   type_vocab_size=2)


def bert_inputs(batch=3, seq=16, vocab=99, seed=0):
  """Random encoder features: rows of random lengths, padded, two segments each."""
  rng = np.random.default_rng(seed)
  lengths = rng.integers(3, seq + 1, size=batch)
  mask = (np.arange(seq)[None, :] < lengths[:, None]).astype(np.int32)
  ids = rng.integers(1, vocab, size=(batch, seq)).astype(np.int32) * mask
  segments = ((np.arange(seq)[None, :] >= lengths[:, None] // 2) * mask).astype(np.int32)
  return {"input_ids": ids, "input_mask": mask, "segment_ids": segments}


def tiny_config_file(path, vocab_size, **overrides):
  """Writes TINY_CONFIG with `vocab_size` and `overrides` to `path`; returns the path."""
  with open(path, "w") as f:
    json.dump(dict(TINY_CONFIG, vocab_size=vocab_size, **overrides), f)
  return str(path)


def checkpoint_weights(output_dir):
  """{checkpoint key: array} of the model variables in output_dir's latest checkpoint."""
  reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(output_dir)))
  return {k: reader.get_tensor(k) for k in reader.get_variable_to_shape_map()
          if "OPTIMIZER_SLOT" not in k and k.startswith("bert_weights/")}


def checkpoint_word_embeddings(output_dir, vocab_size):
  """The word embeddings [vocab_size, H] in output_dir's latest checkpoint."""
  found = [v for v in checkpoint_weights(output_dir).values()
           if v.ndim == 2 and v.shape[0] == vocab_size]
  assert len(found) == 1, [v.shape for v in found]
  return found[0]


def minilm_word_embeddings(minilm_dir):
  """MiniLM's word embeddings [30522, 384], read from its safetensors file."""
  from safetensors.numpy import load_file  # pylint: disable=import-outside-toplevel
  weights = load_file(os.path.join(minilm_dir, "model.safetensors"))
  return next(v for k, v in weights.items() if k.endswith("word_embeddings.weight"))

# --- run_pretraining: data and options --------------------------------------------------------

SEQ, PRED = 64, 10  # max_seq_length and max_predictions_per_seq of the sample records


def make_pretraining_records(directory, dynamic_masking=False):
  """Two TFRecord files from sample_data (2,867 instances at dupe_factor 5)."""
  files = [os.path.join(directory, name) for name in ("a.tfrecord", "b.tfrecord")]
  pipeline.run(pipeline.Config(
      input_file=str(SAMPLE / "corpus.txt"), output_file=",".join(files),
      vocab_file=str(SAMPLE / "vocab.txt"), max_seq_length=SEQ,
      max_predictions_per_seq=PRED, dupe_factor=5, num_workers=1,
      dynamic_masking=dynamic_masking), io.StringIO())
  return files


def assert_whole_words_masked(tokens, chosen):
  """Asserts each of Google's whole-word groups in `tokens` is masked all or not at all.

  A group is a candidate (neither [CLS] nor [SEP]) and the "##" pieces after it,
  even across the middle [SEP], as Google joins them. `chosen`: masked positions.
  Returns how many multi-piece groups were masked.
  """
  groups = []
  for j, token in enumerate(tokens):
    if token in ("[CLS]", "[SEP]"):
      continue
    if groups and token.startswith("##"):
      groups[-1].append(j)
    else:
      groups.append([j])
  masked_words = 0
  for group in groups:
    hit = set(chosen).intersection(group)
    assert not hit or hit == set(group), (tokens, group, chosen)
    masked_words += len(group) > 1 and bool(hit)
  return masked_words


def assert_googles_masking(rec, max_predictions, special_ids=(101, 102), mask_id=103):
  """Google's masked-LM statistics on parsed records {feature: [N, ...] array}.

  The exact count per instance, sorted distinct positions never on [CLS] / [SEP]
  (`special_ids`) or padding, and 80% [MASK] / 10% random / 10% kept within
  1.5 points (the records should hold tens of thousands of predictions).
  """
  ids, pos, lbl, w = (rec[k] for k in ("input_ids", "masked_lm_positions", "masked_lm_ids",
                                       "masked_lm_weights"))
  n = rec["input_mask"].sum(1)
  num_pred = (w > 0).sum(1)
  # Exactly Google's count: min(max_predictions, max(1, round(n * 0.15))).
  expected = np.minimum(max_predictions,
                        np.maximum(1, np.array([round(x * 0.15) for x in n.tolist()])))
  assert (num_pred == expected).all()
  assert (w.sum(1) == num_pred).all() and set(np.unique(w)) <= {0.0, 1.0}
  real = w > 0
  assert (pos[~real] == 0).all() and (lbl[~real] == 0).all()
  p = np.where(real, pos, ids.shape[1] + np.arange(max_predictions))
  assert (np.diff(p, axis=1) > 0).all()
  assert (pos[real] < n[:, None].repeat(max_predictions, 1)[real]).all()  # never padding
  at = np.take_along_axis(ids, pos, 1)
  assert not (np.isin(lbl, special_ids) & real).any() and (pos[real] > 0).all()
  total = real.sum()
  masked = (at == mask_id) & real
  kept = (at == lbl) & real & ~masked
  assert abs(masked.sum() / total - 0.8) < 0.015
  assert abs(kept.sum() / total - 0.1) < 0.015  # a random token equal to the original counts here
  assert abs((total - masked.sum() - kept.sum()) / total - 0.1) < 0.015
  # The masked share of real tokens is ~masked_lm_prob (rounding per instance).
  assert abs(total / n.sum() - 0.15) < 0.01


def pretraining_config_file(path, dropout=0.1):
  """The tiny config over sample_data/vocab.txt, 2 * SEQ positions, `dropout` throughout."""
  with open(SAMPLE / "vocab.txt", encoding="utf-8") as f:
    vocab_size = sum(1 for _ in f)
  return tiny_config_file(path, vocab_size, max_position_embeddings=2 * SEQ,
                          hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)


def pretraining_options(data, output_dir, **flags):
  """A 40-step run_pretraining job on `data` (input_file, bert_config_file, unused)."""
  input_file, config_file, _ = data
  values = dict(bert_config_file=config_file, input_file=input_file,
                output_dir=str(output_dir), max_seq_length=SEQ, max_predictions_per_seq=PRED,
                do_train=True, train_batch_size=16, learning_rate=2e-3, num_train_steps=40,
                num_warmup_steps=4, save_checkpoints_steps=20, iterations_per_loop=10,
                log_steps=10, max_eval_steps=5, seed=1)
  values.update(flags)
  return pretraining.PretrainingOptions(**values)


def write_records(path, arrays):
  """One TFRecord file of Google's features from {feature: [N, length] array}."""
  with tf.io.TFRecordWriter(str(path)) as writer:
    for i in range(len(arrays["input_ids"])):
      feature = {}
      for name, values in arrays.items():
        row = np.reshape(values[i], [-1])
        if values.dtype.kind == "f":
          feature[name] = tf.train.Feature(float_list=tf.train.FloatList(value=row))
        else:
          feature[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=row))
      writer.write(tf.train.Example(
          features=tf.train.Features(feature=feature)).SerializeToString())


def copy_records_with_one_changed(source, target, index, change):
  """Copies TFRecord file `source` to `target`, record `index` (0-based) passed through `change`
  (a function editing the record's feature map in place); returns `target`."""
  with tf.io.TFRecordWriter(str(target)) as writer:
    for i, serialized in enumerate(tf.data.TFRecordDataset(str(source)).as_numpy_iterator()):
      if i == index:
        example = tf.train.Example.FromString(serialized)
        change(example.features.feature)
        serialized = example.SerializeToString()
      writer.write(serialized)
  return str(target)


# --- run_classifier: data and options ---------------------------------------------------------


def slice_glue(shared_dir, folder, target, rows):
  """A copy of a GLUE folder with the header + first `rows` rows of each file."""
  os.makedirs(target)
  for name in ("train.tsv", "dev.tsv", "test.tsv"):
    with open(shared_dir / "data" / "glue" / folder / name, encoding="utf-8") as f:
      lines = [line for _, line in zip(range(rows + 1), f)]
    with open(os.path.join(target, name), "w", encoding="utf-8") as f:
      f.writelines(lines)
  return target


def classifier_options(tmp_path, **kwargs):
  """Options to train a tiny random-init model on sample_data/sentiment (SST-2's format)."""
  config = tiny_config_file(tmp_path / "bert_config.json", 2231)
  defaults = dict(task_name="sst-2", data_dir=str(SAMPLE / "sentiment"),
                  vocab_file=str(SAMPLE / "vocab.txt"), output_dir=str(tmp_path / "out"),
                  bert_config_file=config, do_train=True, max_seq_length=32)
  defaults.update(kwargs)
  return classification_run.ClassifierOptions(**defaults)


def google_tiny_options(shared_dir, tmp_path, task_name, folder, rows, **kwargs):
  """Options for a run from Google's tiny checkpoint on the first `rows` rows of a GLUE folder."""
  tiny = shared_dir / "fixtures" / "google_bert_tiny"
  data = slice_glue(shared_dir, folder, str(tmp_path / "data"), rows)
  defaults = dict(task_name=task_name, data_dir=data, vocab_file=str(tiny / "vocab.txt"),
                  output_dir=str(tmp_path / "out"), init_checkpoint=str(tiny / "bert_model.ckpt"),
                  do_train=True, train_batch_size=8, num_train_epochs=1, seed=1)
  defaults.update(kwargs)
  return classification_run.ClassifierOptions(**defaults)

# --- the training loop's toy job --------------------------------------------------------------

# The toy job: y = x . TOY_WEIGHTS over TOY_EXAMPLES examples of TOY_FEATURES features.
TOY_FEATURES = 8
TOY_EXAMPLES = 4096
TOY_WEIGHTS = np.linspace(-1.0, 1.0, TOY_FEATURES).astype(np.float32)


def toy_model_fn():
  """A small MLP with a dict input, like the BERT model's."""
  x = tf_keras.Input((TOY_FEATURES,), name="x")
  hidden = tf_keras.layers.Dense(32, activation="tanh", name="hidden")(x)
  hidden = tf_keras.layers.LayerNormalization(name="LayerNorm")(hidden)
  y = tf_keras.layers.Dense(1, name="output")(hidden)
  return tf_keras.Model({"x": x}, y)


def toy_example(index):
  """Example `index`: x ~ N(0, 1) from a stateless seed, y = x.w (+ a NaN
  in x when index is negative, to poison a batch)."""
  x = tf.random.stateless_normal([TOY_FEATURES], seed=tf.stack([index, 7]))
  poison = tf.where(index < 0, np.nan, 0.0)
  return {"x": x + poison, "y": tf.tensordot(x, TOY_WEIGHTS, 1)}


def toy_dataset_fn(batch_size, poison_batch=None):
  """dataset_fn over TOY_EXAMPLES examples, sharded by input pipeline.

  `batch_size` is global; batch number `poison_batch` (0-based, per input
  pipeline) gets NaN inputs.
  """
  def dataset_fn(context):
    per_replica = context.get_per_replica_batch_size(batch_size)
    indices = tf.data.Dataset.range(TOY_EXAMPLES).shard(
        context.num_input_pipelines, context.input_pipeline_id).repeat()
    if poison_batch is not None:
      start = poison_batch * per_replica
      indices = indices.enumerate().map(
          lambda n, i: tf.where((n >= start) & (n < start + per_replica),
                                -1 - i, i))
    return indices.map(toy_example).batch(per_replica, drop_remainder=True)
  return dataset_fn


def toy_loss_fn(features, outputs):
  """The mean squared error, and the updates of the mse and mae metrics."""
  predictions = tf.cast(outputs[:, 0], tf.float32)
  errors = tf.square(predictions - features["y"])
  return tf.reduce_mean(errors), {"mse": errors,
                                  "mae": (features["y"], predictions)}


def toy_metrics_fn():
  """The toy job's metrics: mse and mae."""
  return {"mse": tf_keras.metrics.Mean(),
          "mae": tf_keras.metrics.MeanAbsoluteError()}


def toy_trainer(strategy, output_dir, num_train_steps, batch_size=16,
                learning_rate=0.05, poison_batch=None, init_fn=None,
                optimizer_fn=None, **config):
  """A Trainer of the toy job; `config` goes to its LoopOptions."""
  config.setdefault("log_steps", 5)
  config.setdefault("save_checkpoints_steps", 1000)
  return loop.Trainer(
      strategy,
      loop.LoopOptions(output_dir=str(output_dir), train_batch_size=batch_size,
                       num_train_steps=num_train_steps, **config),
      toy_model_fn,
      optimizer_fn or (lambda: optimizer_lib.create_optimizer(
          learning_rate, num_train_steps, num_train_steps // 10)),
      toy_loss_fn, toy_dataset_fn(batch_size, poison_batch), toy_metrics_fn,
      init_fn)


class LossRecorder:
  """Collects the "loss" of every progress line."""

  def __init__(self, monkeypatch):
    self.losses = []
    original = loop.summaries.log_progress

    def log_progress(step, num_steps, scalars):
      self.losses.append(scalars["loss"])
      original(step, num_steps, scalars)
    monkeypatch.setattr(loop.summaries, "log_progress", log_progress)


def model_weights(model):
  """{variable name: array} of a Keras model."""
  return {v.name: v.numpy() for v in model.weights}

# --- subprocesses -----------------------------------------------------------------------------


def run_python(code):
  """Runs `code` in a fresh Python; asserts it exits 0; returns its stdout."""
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"), check=False)
  assert out.returncode == 0, out.stderr[-3000:]
  return out.stdout


class FullDiskFile(io.FileIO):
  """A local file on a full disk: a write that reaches it (a flush) fails with ENOSPC."""

  def write(self, b):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def open_on_full_disk(path, mode):
  """`fileio.filesystem.open_file` ("w" or "wb") on a full disk, for monkeypatching."""
  raw = io.BufferedWriter(FullDiskFile(path, "w"))
  return io.TextIOWrapper(raw, encoding="utf-8", newline="") if mode == "w" else raw


def free_port():
  """A localhost TCP port that is free now (for a TF_CONFIG cluster)."""
  with socket.socket() as s:
    s.bind(("localhost", 0))
    return s.getsockname()[1]


def signal_after_first_checkpoint(process, output_dir, timeout, signum=signal.SIGKILL):
  """Waits for `output_dir/checkpoint`, then sends `signum` (default: a real kill, no clean-up).

  Returns what the process wrote to its pipes ((None, None) for those not piped).
  """
  try:
    deadline = time.time() + timeout
    while not (output_dir / "checkpoint").exists():
      assert process.poll() is None, "the run ended before its first save"
      assert time.time() < deadline, "no checkpoint in time"
      time.sleep(0.01)
    process.send_signal(signum)
    return process.communicate(timeout=timeout)
  finally:
    process.kill()
    process.wait()


def wait_for_success(processes, timeout):
  """Waits for every process (stderr piped as text); asserts each exited 0; returns the logs.

  Processes still running at the timeout, or after a failure, are killed.
  """
  try:
    logs = [p.communicate(timeout=timeout)[1] for p in processes]
  finally:
    for p in processes:
      p.kill()
      p.wait()
  for p, log in zip(processes, logs):
    assert p.returncode == 0, log[-5000:]
  return logs


# --- SQuAD ------------------------------------------------------------------------------------

def first_answers_only(data):
  """The training-mode input of the fixtures: every question's answers cut to the first."""
  for article in data["data"]:
    for paragraph in article["paragraphs"]:
      for qa in paragraph["qas"]:
        qa["answers"] = qa["answers"][:1]
  return data


def write_json(path, data):
  with open(path, "w", encoding="utf-8") as f:
    json.dump(data, f)
  return str(path)


def split_squad_articles(path, train_articles, max_questions, directory):
  """(train file, predict file) in `directory`, split by article from the SQuAD file `path`.

  The first `train_articles` articles train (answers cut to the first, as training
  needs); the others predict, at most `max_questions` of them (0: all).
  """
  with open(path, encoding="utf-8") as f:
    data = json.load(f)
  train = first_answers_only({"version": data.get("version"),
                              "data": json.loads(json.dumps(data["data"][:train_articles]))})
  predict, count = [], 0
  for article in data["data"][train_articles:]:
    paragraphs = []
    for paragraph in article["paragraphs"]:
      if max_questions and count >= max_questions:
        break
      qas = paragraph["qas"][:max_questions - count] if max_questions else paragraph["qas"]
      paragraphs.append(dict(paragraph, qas=qas))
      count += len(qas)
    if paragraphs:
      predict.append(dict(article, paragraphs=paragraphs))
  return (write_json(os.path.join(directory, "train.json"), train),
          write_json(os.path.join(directory, "predict.json"),
                     {"version": data.get("version"), "data": predict}))


# The fixture sets, with the flag Google's reader ran under (see fixtures/squad/README.md).
SQUAD_SETS = {"v1_sel128": False, "v1_first20_384": False, "v2_sel128": True, "reader_edge": False}
SQUAD_CASES = [(name, mode) for name in SQUAD_SETS for mode in ("train", "eval")]


def squad_fixture_dir(shared_dir):
  return shared_dir / "fixtures" / "squad"


def read_jsonl(path):
  with open(path, encoding="utf-8") as f:
    return [json.loads(line) for line in f]


def read_squad_fixture_set(shared_dir, tmp_path, name, mode):
  """Our reader on inputs/<name>.json as the fixtures ran Google's -> (examples, skipped ids)."""
  path = squad_fixture_dir(shared_dir) / "inputs" / f"{name}.json"
  if mode == "train":
    with open(path, encoding="utf-8") as f:
      path = write_json(tmp_path / f"{name}.train.json", first_answers_only(json.load(f)))
  return read_squad_examples(str(path), mode == "train", SQUAD_SETS[name])
