"""The job skeleton: a new trainer is a `Task` (here a tiny regression), the runner does the
rest (train, resume, which weights to evaluate, eval_results.txt); runtime options and flags."""

import dataclasses
import os

from absl import flags
import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import cli
from cli import options
import modeling
from tests.tiny_models import TINY_BERT
from training import inputs, runner, runtime
from training import task as task_lib

WEIGHTS = np.array([1.0, -2.0, 0.5, 3.0], np.float32)
SPEC = {"x": tf.io.FixedLenFeature([4], tf.float32), "y": tf.io.FixedLenFeature([1], tf.float32)}


class LinearTask(task_lib.Task):
  """y = x . WEIGHTS, learned by one Dense layer: a whole trainer in a few lines."""

  def __init__(self, path):
    self.path = path

  def build_model(self):
    x = tf_keras.Input(shape=(4,), name="x")
    return tf_keras.Model(x, tf_keras.layers.Dense(1, name="dense")(x))

  def dataset_fn(self, mode, batch_size):
    return inputs.tfrecord_dataset_fn([self.path], SPEC, mode, batch_size, seed=1)

  def loss(self, features, outputs):
    error = tf.cast(outputs, tf.float32) - features["y"]
    return tf.reduce_mean(tf.square(error)), {"abs_error": (tf.abs(error),)}

  def metrics(self):
    return {"abs_error": tf_keras.metrics.Mean("abs_error")}


@pytest.fixture(name="records", scope="module")
def fixture_records(tmp_path_factory):
  path = str(tmp_path_factory.mktemp("data") / "linear.tfrecord")
  x = np.random.default_rng(0).normal(size=(64, 4)).astype(np.float32)
  with tf.io.TFRecordWriter(path) as writer:
    for row in x:
      writer.write(tf.train.Example(features=tf.train.Features(feature={
          "x": tf.train.Feature(float_list=tf.train.FloatList(value=row)),
          "y": tf.train.Feature(float_list=tf.train.FloatList(value=[row @ WEIGHTS])),
      })).SerializeToString())
  return path


def read_results(output_dir):
  with open(os.path.join(output_dir, runner.EVAL_RESULTS), encoding="utf-8") as f:
    return dict(line.rstrip("\n").split(" = ") for line in f)


def test_a_task_trains_resumes_and_evaluates(records, tmp_path):
  options = runtime.RuntimeOptions(save_checkpoints_steps=50, log_steps=50, seed=1)
  job = runner.Runner(options, tmp_path / "out")
  task = LinearTask(records)
  scalars = job.train(task, train_batch_size=16, num_train_steps=100, learning_rate=0.1,
                      num_warmup_steps=0)
  assert job.global_step == 100 and scalars["loss"] < 0.05, scalars
  results = job.evaluate(task, batch_size=10)
  # 64 records in batches of 10 (the last one of 4 kept): mean of 7 batch losses.
  assert results["global_step"] == 100 and results["abs_error"] < 0.2
  written = read_results(tmp_path / "out")
  assert sorted(written) == ["abs_error", "global_step", "loss"]
  assert float(written["loss"]) == pytest.approx(results["loss"], rel=1e-6)
  predictions = np.concatenate(list(job.predict(task, task_lib.PREDICT, 16)))
  assert predictions.shape == (64, 1)
  # A new runner on the same output_dir: training is done; evaluation reads the checkpoint.
  again = runner.Runner(options, tmp_path / "out", init_checkpoint="/no/such/checkpoint")
  assert again.train(task, 16, 100, 0.1, 0) == {}
  fresh = runner.Runner(options, tmp_path / "out")
  assert fresh.evaluate(task, batch_size=10) == pytest.approx(results, rel=1e-6)


@pytest.mark.parametrize("kernels, device, family", [
    ("auto", None, "fused"),  # this host: CPUs only
    ("auto", "/job:localhost/replica:0/task:0/device:GPU:0", "keras"),
    ("auto", "/job:worker/replica:0/task:0/device:TPU:0", "keras"),
    ("fused", "/job:localhost/replica:0/task:0/device:GPU:0", "fused"),
    ("keras", None, "keras"),
])
def test_the_runner_sets_the_kernels_for_its_strategys_devices(tmp_path, monkeypatch, kernels,
                                                               device, family):
  """--kernels (default auto) is resolved for the strategy's devices (a GPU or TPU faked here)
  and is what the job's models are built with until the runner closes."""
  assert runtime.RuntimeOptions().kernels == "auto"
  strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
  if device:
    monkeypatch.setattr(type(strategy.extended), "worker_devices", property(lambda _: (device,)))
  monkeypatch.setattr(runtime.RuntimeOptions, "build_strategy", lambda _: strategy)
  job = runner.Runner(runtime.RuntimeOptions(kernels=kernels), tmp_path / "out")
  assert modeling.current_kernels() == family
  assert {layer.kernels for layer in modeling.build_classifier(TINY_BERT, 2).submodules
          if hasattr(layer, "kernels")} == {family}
  job.close()
  assert modeling.current_kernels() == "fused"


def test_evaluation_weights_policy(records, tmp_path):
  task = LinearTask(records)
  options = runtime.RuntimeOptions()
  with pytest.raises(runner.NoWeightsError, match=r"no checkpoint in output_dir .*empty and no "
                     r"--init_checkpoint: nothing to evaluate"):
    runner.Runner(options, tmp_path / "empty").evaluate(task, batch_size=8)
  assert not (tmp_path / "empty" / runner.EVAL_RESULTS).exists()
  # init_checkpoint (no checkpoint in output_dir yet): its weights, at global step 0.
  model = task.build_model()
  model.get_layer("dense").set_weights([WEIGHTS[:, None], np.zeros([1], np.float32)])
  init = tf.train.Checkpoint(model=model).save(str(tmp_path / "init" / "ckpt"))
  results = runner.Runner(options, tmp_path / "warm", init_checkpoint=init).evaluate(task, 8)
  assert results["global_step"] == 0 and results["loss"] < 1e-10


@pytest.mark.parametrize("name, value, message", [
    ("dtype", "float16", "--dtype must be one of float32, mixed_float16, mixed_bfloat16"),
    ("kernels", "cuda", "--kernels must be one of auto, fused, keras, got 'cuda'"),
    ("optimizer", "sgd", "--optimizer must be one of adamw, adamw_corrected, lamb"),
    ("distribution_strategy", "all", "--distribution_strategy must be one of one_device"),
    ("gradient_accumulation_steps", 0, "--gradient_accumulation_steps must be positive, got 0"),
    ("keep_checkpoint_max", -1, "--keep_checkpoint_max must be positive, got -1"),
    ("log_steps", 0, "--log_steps must be positive"),
    ("num_gpus", -2, "--num_gpus must be >= 0, got -2"),
])
def test_bad_runtime_options_name_the_flag(name, value, message):
  with pytest.raises(cli.FlagError, match=message):
    runtime.RuntimeOptions(**{name: value})


def test_check_positive_rejects_nan_and_zero():
  for bad in (0, -1e-5, float("nan"), float("inf")):
    with pytest.raises(cli.FlagError, match="--learning_rate must be positive"):
      runtime.check_positive("learning_rate", bad)
  runtime.check_positive("learning_rate", 1e-5)


def test_runtime_flags_build_the_options():
  flag_values = flags.FlagValues()
  options.define_flags(runtime.RuntimeOptions, flag_values)
  flag_values(["prog", "--kernels=keras", "--optimizer=lamb", "--gradient_accumulation_steps=3",
               "--use_tpu", "--seed=7"])
  built = options.from_flags(runtime.RuntimeOptions, flag_values)
  assert built == runtime.RuntimeOptions(kernels="keras", optimizer="lamb",
                                           gradient_accumulation_steps=3, use_tpu=True, seed=7)
  assert built.strategy_name == "tpu"
  # One flag per field, with the field's default.
  defaults = runtime.RuntimeOptions()
  for field in dataclasses.fields(runtime.RuntimeOptions):
    assert flag_values[field.name].default == getattr(defaults, field.name), field.name
