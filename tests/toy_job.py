"""The training loop's toy job: y = x . TOY_WEIGHTS, learned by a small MLP, with a NaN batch
on request; its Trainer and a recorder of the logged losses."""

import numpy as np
import tensorflow as tf
import tf_keras

from training import loop
from training import optimizer as optimizer_lib

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
