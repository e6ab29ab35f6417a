"""Evaluation and prediction under a strategy, and Google's eval_results.txt format."""

import os
import weakref

from absl import logging
import numpy as np
import tensorflow as tf
import tf_keras

from fileio import atomic_write_text
from training import loop


def evaluate(strategy, model, loss_fn, dataset_fn, metrics_fn=None,
             max_eval_steps=None):
  """Runs up to `max_eval_steps` batches (None: the whole dataset).

  `loss_fn`, `metrics_fn` and `dataset_fn` are the training loop's (the
  dataset batched for evaluation). Returns {'loss': mean of the batch losses,
  **metric results}, floats, like Estimator's evaluate.
  """
  with strategy.scope():
    metrics = dict(metrics_fn()) if metrics_fn else {}
    metrics['loss'] = tf_keras.metrics.Mean('loss')

  def replica_step(features):
    outputs = model(loop.model_inputs(model, features), training=False)
    loss, updates = loop.split_loss(loss_fn(features, outputs))
    loop.update_metrics(metrics, updates)
    metrics['loss'].update_state(loss)

  dataset = strategy.distribute_datasets_from_function(dataset_fn)

  @tf.function(input_signature=[dataset.element_spec])
  def step(features):
    strategy.run(replica_step, args=(features,))

  for num_batches, features in enumerate(dataset):
    if max_eval_steps is not None and num_batches >= max_eval_steps:
      break
    step(features)
  return loop.metric_results(metrics)


def predict(strategy, model, dataset_fn):
  """Yields the model's outputs (numpy, nested like the model's) per batch.

  `dataset_fn` is a finite dataset_fn like the training loop's. Under several
  replicas on one worker, the replicas' batches come back in dataset order
  (replica i of a step holds the step's i-th batch); a worker of a multi-worker
  strategy yields the outputs of its own shard.
  """
  dataset = strategy.distribute_datasets_from_function(dataset_fn)
  step = _predict_step(strategy, model, dataset.element_spec)
  for features in dataset:
    for outputs in strategy.experimental_local_results(step(features)):
      yield tf.nest.map_structure(lambda t: t.numpy(), outputs)


# {model: {(strategy, element_spec's repr): its traced prediction step}}; an entry goes with
# its model (the steps hold the model by weak reference).
_PREDICT_STEPS = weakref.WeakKeyDictionary()


def _predict_step(strategy, model, element_spec):
  """The model's prediction step for batches of `element_spec` under `strategy`, traced once
  per model: the dev set and the test set of a run (the same features) share it."""
  steps = _PREDICT_STEPS.setdefault(model, {})
  key = (strategy, repr(element_spec))
  if key not in steps:
    model_ref = weakref.ref(model)

    def replica_step(features):
      model = model_ref()
      return model(loop.model_inputs(model, features), training=False)

    steps[key] = tf.function(lambda features: strategy.run(replica_step, args=(features,)),
                             input_signature=[element_spec])
  return steps[key]


def format_results(results):
  """Google's lines: 'key = value', sorted keys, values printed as numpy's."""
  lines = []
  for key in sorted(results):
    value = results[key]
    if isinstance(value, float):
      value = np.float32(value)
    lines.append(f'{key} = {value}\n')
  return ''.join(lines)


def write_eval_results(path, results):
  """Logs the results and writes them to `path` atomically."""
  path = os.fspath(path)
  text = format_results(results)
  logging.info('***** Eval results *****')
  for line in text.splitlines():
    logging.info('  %s', line)
  atomic_write_text(path, text)
