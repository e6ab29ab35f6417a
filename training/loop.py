"""A custom training loop under a tf.distribute strategy.

The caller supplies what is specific to a job:
  model_fn() -> tf_keras.Model, called as model(features, training=True)
    (a functional model gets only the features named like its inputs);
  optimizer_fn() -> optimizer (e.g. `optimizer.create_optimizer(...)`);
  loss_fn(features, outputs) -> loss, or (loss, metric_updates) where
    metric_updates maps a metric name to the arguments of its update_state;
    loss is the MEAN over the per-replica batch (the loop turns it into the
    global-batch mean);
  metrics_fn() -> {name: tf_keras.metrics.Metric} (optional);
  dataset_fn(input_context) -> tf.data.Dataset of feature dicts, batched to
    input_context.get_per_replica_batch_size(train_batch_size) and sharded
    by input_context (file-level sharding);
  init_fn(model) (optional): warm start, run only when no checkpoint exists;
  checkpoint_fn(model, optimizer, **extra) -> tf.train.Checkpoint (optional):
    how output_dir's checkpoints track the model; BERT jobs pass
    `modeling.new_checkpoint`, so each checkpoint is also an
    `init_checkpoint` for `modeling.load_checkpoint`.
Everything runs under `strategy.scope()`; model and optimizer state, the
global step (the optimizer's iteration count) and, on a single worker, the
input position are checkpointed, so rerunning with the same output_dir resumes.

SIGTERM or Ctrl-C during training finishes the step in flight on every worker,
saves a checkpoint there and raises `cli.Stopped` (see `training.preemption`);
a lost worker under MultiWorkerMirroredStrategy is a `WorkerLostError`.
"""

import dataclasses
import math
import os
import signal
import time

from absl import logging
import tensorflow as tf
import tf_keras

from cli import Stopped, UserError
from training import checkpointing
from training import precision
from training import preemption
from training import strategy as strategy_lib
from training import summaries


class NonFiniteLossError(UserError, RuntimeError):
  """Training stopped because the loss became NaN or infinite."""


class WorkerLostError(UserError):
  """Another worker of a multi-worker job stopped answering (killed, crashed, unreachable)."""


# What a collective or the coordination service raises when a peer is gone.
PEER_ERRORS = (tf.errors.UnavailableError, tf.errors.AbortedError, tf.errors.CancelledError,
               tf.errors.DeadlineExceededError, tf.errors.InternalError)


@dataclasses.dataclass(frozen=True)
class LoopOptions:
  """Loop settings (the run_* scripts' flags).

  train_batch_size: global examples per forward pass (all replicas); an
    optimizer step sees train_batch_size * gradient_accumulation_steps.
  num_train_steps: optimizer steps (the global step at the end).
  """
  output_dir: str
  train_batch_size: int
  num_train_steps: int
  save_checkpoints_steps: int = 1000
  keep_checkpoint_max: int = 5
  iterations_per_loop: int = 1000
  log_steps: int = 100
  gradient_accumulation_steps: int = 1
  dtype: str = 'float32'
  use_xla: bool = False
  checkpoint_data_iterator: bool = True

  def __post_init__(self):
    for name in ('train_batch_size', 'num_train_steps',
                 'save_checkpoints_steps', 'keep_checkpoint_max',
                 'iterations_per_loop', 'log_steps',
                 'gradient_accumulation_steps'):
      if getattr(self, name) <= 0:
        raise ValueError(f'{name} must be positive, got {getattr(self, name)}')
    if self.dtype not in precision.DTYPES:
      raise ValueError(f'dtype must be one of {precision.DTYPES}, '
                       f'got {self.dtype!r}')


def split_loss(loss_output):
  """(loss, metric_updates) from what a loss_fn returns."""
  if isinstance(loss_output, (tuple, list)):
    loss, updates = loss_output
  else:
    loss, updates = loss_output, {}
  return tf.cast(loss, tf.float32), updates


def update_metrics(metrics, updates):
  """Calls metrics[name].update_state(*args) for each update."""
  unknown = set(updates) - set(metrics)
  if unknown:
    raise KeyError(f'loss_fn updates metrics {sorted(unknown)} that '
                   f'metrics_fn does not define (it has {sorted(metrics)})')
  for name, args in updates.items():
    if isinstance(args, dict):
      metrics[name].update_state(**args)
    elif isinstance(args, (tuple, list)):
      metrics[name].update_state(*args)
    else:
      metrics[name].update_state(args)


def model_inputs(model, features):
  """The features a functional model takes (labels stay out of its call)."""
  names = getattr(model, 'input_names', None)
  if isinstance(features, dict) and names:
    return {name: features[name] for name in names}
  return features


def default_checkpoint(model, optimizer, **extra):
  """Tracks the model as an object (Keras layer graph), its optimizer and extra."""
  return tf.train.Checkpoint(model=model, optimizer=optimizer, **extra)


def metric_results(metrics):
  return {name: float(metric.result()) for name, metric in metrics.items()}


class Trainer:
  """Builds model and optimizer under the strategy and trains them."""

  def __init__(self, strategy, config, model_fn, optimizer_fn, loss_fn,
               dataset_fn, metrics_fn=None, init_fn=None, checkpoint_fn=None):
    self.strategy = strategy
    self.config = config
    self._loss_fn = loss_fn
    self._dataset_fn = dataset_fn
    self._init_fn = init_fn
    self._checkpoint_fn = checkpoint_fn or default_checkpoint
    self._stop_signals = preemption.StopSignals()  # its flag outside the strategy's variables
    # A TPU step cannot read a host variable: there (one host) the host loop reads the flag.
    self._stop_in_replicas = not isinstance(strategy, tf.distribute.TPUStrategy)
    with strategy.scope():
      with precision.policy_scope(config.dtype):
        self.model = model_fn()
      self.optimizer = precision.wrap_optimizer(optimizer_fn(), config.dtype)
      self.metrics = dict(metrics_fn()) if metrics_fn else {}
      self._loss_metric = tf_keras.metrics.Mean('loss')
    self._loss_scaling = isinstance(
        self.optimizer, tf_keras.mixed_precision.LossScaleOptimizer)
    self._gradients = tf.function(self._gradients_fn,
                                  jit_compile=config.use_xla or None)
    self._train_steps = tf.function(self._train_steps_fn)

  @property
  def global_step(self):
    """Optimizer steps taken (restored with the checkpoint)."""
    return int(self.optimizer.iterations.numpy())

  def learning_rate(self):
    lr = self.optimizer.learning_rate
    if isinstance(lr, tf_keras.optimizers.schedules.LearningRateSchedule):
      lr = lr(self.optimizer.iterations)
    # A constant rate is a variable (a MirroredVariable under a strategy).
    return float(tf.convert_to_tensor(lr))

  def _distributed_dataset_fn(self, input_context):
    dataset = self._dataset_fn(input_context)
    steps = self.config.gradient_accumulation_steps
    if steps > 1:
      # [steps, per-replica batch, ...]: one element per optimizer step.
      dataset = dataset.batch(steps, drop_remainder=True)
    return dataset

  def _gradients_fn(self, features):
    """Per replica: loss, metric updates and gradients of one batch."""
    scale = (self.strategy.num_replicas_in_sync *
             self.config.gradient_accumulation_steps)
    variables = self.model.trainable_variables
    with tf.GradientTape() as tape:
      outputs = self.model(model_inputs(self.model, features), training=True)
      loss, updates = split_loss(self._loss_fn(features, outputs))
      # Summed over replicas and micro-batches, the gradient is the one of
      # the mean loss over all train_batch_size * accumulation examples.
      scaled_loss = loss / scale
      if self._loss_scaling:
        scaled_loss = self.optimizer.get_scaled_loss(scaled_loss)
    grads = tape.gradient(scaled_loss, variables)
    if self._loss_scaling:
      grads = self.optimizer.get_unscaled_gradients(grads)
    # Dense gradients (embedding lookups give IndexedSlices): the all-reduce
    # and accumulation need fixed shapes; Google's update is dense anyway.
    grads = [None if g is None else tf.convert_to_tensor(g) for g in grads]
    return loss, updates, grads

  def _step_and_stop_flag(self, features):
    """Per replica: [loss, stop flag] and the gradients of one optimizer step.

    The flag is read once the gradients are there: a signal during the step
    stops the loop after it. Reduced with the loss (one all-reduce), it is the
    same on every worker.
    """
    loss, grads = self._replica_step(features)
    with tf.control_dependencies([g for g in grads if g is not None]):
      flag = tf.cast(self._stop_signals.flag.read_value(), tf.float32)
    return tf.stack([loss, flag]), grads

  def _batch_step(self, features):
    """Per replica: gradients of one batch; updates the metrics."""
    loss, updates, grads = self._gradients(features)
    update_metrics(self.metrics, updates)
    self._loss_metric.update_state(loss)
    return loss, grads

  def _replica_step(self, features):
    """Per replica: mean loss and summed gradients of one optimizer step."""
    steps = self.config.gradient_accumulation_steps
    if steps == 1:
      return self._batch_step(features)
    # The first micro-batch outside the loop fixes which gradients are None
    # (variables the loss does not use: not updated, as in Google's code);
    # the loop carries only the others.
    total_loss, first_grads = self._batch_step(
        tf.nest.map_structure(lambda t: t[0], features))
    used = [j for j, g in enumerate(first_grads) if g is not None]
    totals = [first_grads[j] for j in used]
    for i in tf.range(1, steps):
      micro_batch = tf.nest.map_structure(lambda t, i=i: t[i], features)
      loss, grads = self._batch_step(micro_batch)
      total_loss += loss
      totals = [t + grads[j] for t, j in zip(totals, used)]
    total_grads = [None] * len(first_grads)
    for j, total in zip(used, totals):
      total_grads[j] = total
    return total_loss / steps, total_grads

  def _apply(self, grads):
    variables = self.model.trainable_variables
    self.optimizer.apply_gradients(
        [(g, v) for g, v in zip(grads, variables) if g is not None])

  def _make_iterator(self):
    """The input iterator, and whether it can be checkpointed.

    On a single worker, one host pipeline feeds the replicas in turn (as
    distribute_datasets_from_function does there) through a plain tf.data
    iterator, which checkpoints its position. Otherwise the strategy
    distributes the datasets and the position is not saved.
    """
    strategy = self.strategy
    if (self.config.checkpoint_data_iterator and
        not strategy_lib.is_multi_worker(strategy) and
        not isinstance(strategy, tf.distribute.TPUStrategy)):
      context = tf.distribute.InputContext(
          num_input_pipelines=1, input_pipeline_id=0,
          num_replicas_in_sync=strategy.num_replicas_in_sync)
      return iter(self._distributed_dataset_fn(context)), True
    return iter(strategy.distribute_datasets_from_function(
        self._distributed_dataset_fn)), False

  def _iterator_and_checkpointer(self):
    """A new input iterator, and the Checkpointer that saves it with the model and optimizer."""
    iterator, saveable = self._make_iterator()
    extra = {'data_iterator': iterator} if saveable else {}
    return iterator, checkpointing.Checkpointer(
        self._checkpoint_fn(self.model, self.optimizer, **extra), self.config.output_dir,
        self.config.keep_checkpoint_max, strategy_lib.is_chief(self.strategy))

  def _next_batch(self, iterator):
    """Next per-replica features (a PerReplica value under several)."""
    if isinstance(iterator, tf.data.Iterator):
      batches = [next(iterator)
                 for _ in range(self.strategy.num_replicas_in_sync)]
      return self.strategy.experimental_distribute_values_from_function(
          lambda context: batches[context.replica_id_in_sync_group])
    return next(iterator)

  def _train_steps_fn(self, iterator, num_steps):
    """Runs up to `num_steps` optimizer steps; stops at a non-finite loss or a stop request.

    Returns the last loss (mean over replicas) and whether a stop was
    requested (on any worker); when the loss is not finite, its step's
    gradients were not applied, else the last step was.
    """
    loss = tf.constant(0.0)
    stop = tf.constant(False)
    for _ in tf.range(num_steps):
      if self._stop_in_replicas:
        per_replica_stats, per_replica_grads = self.strategy.run(
            self._step_and_stop_flag, args=(self._next_batch(iterator),))
        # [loss, flag], each a mean over replicas.
        stats = self.strategy.reduce(tf.distribute.ReduceOp.MEAN, per_replica_stats, axis=None)
        loss, stop = stats[0], stats[1] > 0
      else:
        per_replica_loss, per_replica_grads = self.strategy.run(
            self._replica_step, args=(self._next_batch(iterator),))
        loss = self.strategy.reduce(tf.distribute.ReduceOp.MEAN, per_replica_loss, axis=None)
      if not tf.math.is_finite(loss):
        break
      self.strategy.run(self._apply, args=(per_replica_grads,))
      if not self._stop_in_replicas:
        stop = self._stop_signals.flag.read_value() > 0
      if stop:
        break
    return loss, stop

  def _steps_to_boundary(self, step):
    """Steps until the next log, checkpoint or end, at most one inner loop."""
    config = self.config
    save_every = config.save_checkpoints_steps
    return min(config.iterations_per_loop,
               config.log_steps - step % config.log_steps,
               save_every - step % save_every,
               config.num_train_steps - step)

  def _scalars(self, examples_per_second):
    """Loss, metrics and rates since the last log; resets the metrics."""
    scalars = {'loss': float(self._loss_metric.result()),
               'learning_rate': self.learning_rate(),
               'examples_per_second': examples_per_second}
    scalars.update(metric_results(self.metrics))
    for metric in [self._loss_metric, *self.metrics.values()]:
      metric.reset_state()
    return scalars

  def train(self):
    """Trains to config.num_train_steps, resuming from output_dir if possible.

    Returns the last logged scalars ({} if there was nothing to do).
    Raises NonFiniteLossError on a NaN/Inf loss without saving that state;
    `cli.Stopped` after saving on SIGTERM or Ctrl-C (from its start on:
    one that comes while it restores stops after the first step);
    WorkerLostError when a peer of a multi-worker job is gone.
    """
    with self._stop_signals:
      try:
        return self._restore_and_train()
      except PEER_ERRORS as e:
        if not strategy_lib.is_multi_worker(self.strategy):
          raise
        raise WorkerLostError(self._lost_worker_message(e)) from None

  def _restore_and_train(self):
    config, strategy = self.config, self.strategy
    is_chief = strategy_lib.is_chief(strategy)
    logging.info('Training with %s over %d replica(s)',
                 type(strategy).__name__, strategy.num_replicas_in_sync)
    iterator, checkpointer = self._iterator_and_checkpointer()
    try:
      restored = checkpointer.restore_latest()
    except checkpointing.InputPositionError as e:
      logging.warning('%s holds an input position this input pipeline cannot take (it '
                      'changed since): resuming from its weights and step, with the input '
                      'started afresh', e)
      iterator, checkpointer = self._iterator_and_checkpointer()
      restored = checkpointer.restore_latest(into=self._checkpoint_fn(self.model,
                                                                      self.optimizer))
    if restored is None and self._init_fn:
      logging.info('No checkpoint in %s: warm start (init_fn)',
                   config.output_dir)
      self._init_fn(self.model)
    step = self.global_step
    if step >= config.num_train_steps:
      logging.info('Global step %d >= num_train_steps %d: nothing to train',
                   step, config.num_train_steps)
      checkpointer.skip_pending()
      return {}
    writer = summaries.ScalarWriter(config.output_dir, is_chief)
    try:
      return self._train_loop(iterator, checkpointer, writer, step)
    finally:
      writer.close()

  def _lost_worker_message(self, error):
    """WorkerLostError's line: who is gone, and what every worker's rerun resumes from."""
    who = strategy_lib.lost_peer(self.strategy, error)
    output_dir = self.config.output_dir
    latest = checkpointing.latest_checkpoint(output_dir)
    resume = (f'kept {latest}; the same command on every worker resumes from step '
              f'{checkpointing.checkpoint_step(latest)}' if latest else
              f'no checkpoint in {output_dir} yet; the same command on every worker starts over')
    return (f'lost {who or "another worker"} of the cluster (killed, crashed or unreachable): '
            f'training stopped; {resume}')

  def _train_loop(self, iterator, checkpointer, writer, step):
    """`train`'s loop from global step `step`, with stop signals watched."""
    config = self.config
    examples_per_step = (config.train_batch_size *
                         config.gradient_accumulation_steps)
    scalars = {}
    last_log_step, last_log_time = step, time.time()
    while step < config.num_train_steps:
      num_steps = self._steps_to_boundary(step)
      loss, stop = self._train_steps(iterator, tf.constant(num_steps))
      loss, stop = float(loss), bool(stop)
      step = self.global_step
      if not math.isfinite(loss):
        raise NonFiniteLossError(
            f'Loss is {loss} at global step {step}: stopped training. This '
            'step was not applied and nothing was saved; the latest good '
            f'checkpoint is {checkpointer.latest}.')
      at_end = step >= config.num_train_steps
      if step % config.log_steps == 0 or at_end:
        now = time.time()
        rate = ((step - last_log_step) * examples_per_step /
                (now - last_log_time))
        scalars = self._scalars(rate)
        summaries.log_progress(step, config.num_train_steps, scalars)
        writer.write(scalars, step)
        last_log_step, last_log_time = step, now
      if step % config.save_checkpoints_steps == 0 or at_end or stop:
        checkpointer.save(step)
      if stop:
        # A worker told by the all-reduce, not by a signal, reports SIGTERM.
        signum = self._stop_signals.signum or signal.SIGTERM
        logging.info('Stopped on %s after global step %d', signum.name, step)
        raise Stopped(signum, checkpointing.kept_note(os.path.join(
            config.output_dir, f'{checkpointing.CHECKPOINT_NAME}-{step}'), signum))
    return scalars

