"""`Task`: what a trainer implements; `training.runner.Runner` runs it.

A task says what is specific to one job: its model, its input pipeline per
mode, its loss and metrics, how its weights are checkpointed and warm-started.
Everything else (strategy, precision, the training loop, resume, which
weights to evaluate, eval_results.txt, errors) is the runner's and the same
for every trainer.
"""

import tensorflow as tf

TRAIN, EVAL, PREDICT = "train", "eval", "predict"


class Task:
  """Subclasses implement `build_model`, `dataset_fn` and `loss`; the rest is optional."""

  def build_model(self):
    """The tf_keras model; called under the strategy scope and the dtype policy."""
    raise NotImplementedError

  def dataset_fn(self, mode, batch_size):
    """`dataset_fn(tf.distribute.InputContext)` -> tf.data.Dataset of feature dicts.

    mode is TRAIN (repeated, shuffled), EVAL or PREDICT (finite, in order);
    batch_size is global: each pipeline batches
    `input_context.get_per_replica_batch_size(batch_size)`.
    """
    raise NotImplementedError

  def loss(self, features, outputs):
    """The per-replica batch's mean loss, or (loss, {metric name: update_state args})."""
    raise NotImplementedError

  def metrics(self):
    """{name: tf_keras.metrics.Metric} updated by `loss`; logged in training and evaluation."""
    return {}

  def new_checkpoint(self, model, optimizer, **extra):
    """The tf.train.Checkpoint that tracks model, optimizer and `extra` in output_dir."""
    return tf.train.Checkpoint(model=model, optimizer=optimizer, **extra)

  def load_weights(self, model, path):
    """Loads a checkpoint's weights into `model` (warm start, evaluation); returns a summary."""
    tf.train.Checkpoint(model=model).restore(path).expect_partial()
    return path
