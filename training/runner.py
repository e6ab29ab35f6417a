"""`Runner`: the one job skeleton every trainer runs its `Task` on.

It owns, for every trainer alike: the strategy (built before any other
TensorFlow work, as multi-worker collectives require), the kernel family for
the strategy's devices (`modeling.kernels`), the seed, output_dir,
training with resume (`training.loop.Trainer`), the which-weights policy for
evaluation and prediction, `eval_results.txt`, and the lock that keeps a
second process out of output_dir until `close()`.
"""

import contextlib
import os

from absl import logging
import tf_keras

from cli import FlagError
from fileio import filesystem
from modeling import kernels as kernels_lib
from training import checkpointing, evaluation, loop, optimizer, output_lock, precision, schedule
from training import strategy as strategy_lib
from training import task as task_lib

EVAL_RESULTS = "eval_results.txt"


class NoWeightsError(FlagError):
  """Evaluation or prediction was asked for, but there are no weights to use."""


class Runner:
  """Runs tasks under `options` (a `training.runtime.RuntimeOptions`) in `output_dir`.

  Weights: after `train`, the model it trained (for the task it trained);
  otherwise output_dir's latest checkpoint, else `init_checkpoint`, else
  `NoWeightsError`. Training resumes from output_dir's latest checkpoint and
  warm-starts from `init_checkpoint` only when there is none.
  """

  def __init__(self, options, output_dir, init_checkpoint=None):
    if not output_dir:
      raise FlagError("--output_dir is required")
    self.options = options
    self.output_dir = os.fspath(output_dir)
    self.init_checkpoint = os.fspath(init_checkpoint) if init_checkpoint else None
    self.strategy = options.build_strategy()
    if options.seed is not None:
      tf_keras.utils.set_random_seed(options.seed)
    filesystem.makedirs(self.output_dir)  # local: an OSError naming the path
    # One run per output_dir (training.output_lock); `close()` lets go.
    self._lock = output_lock.OutputDirLock(self.output_dir) if self.is_chief else None
    self.model = None
    self._model_task = None  # the task `model` was built for
    self.global_step = None
    # The family every model and loss of the job is built with, until `close()`.
    self._settings = contextlib.ExitStack()
    family = self._settings.enter_context(kernels_lib.kernels_scope(
        options.kernels, self.strategy.extended.worker_devices))
    logging.info("Kernels: %s (--kernels=%s)", family, options.kernels)

  def close(self):
    """Ends the run: releases output_dir's lock, restores the kernel family."""
    if self._lock is not None:
      self._lock.release()
    self._settings.close()

  @property
  def is_chief(self):
    """Whether this worker writes outputs (always, except non-chief multi-workers)."""
    return strategy_lib.is_chief(self.strategy)

  def train(self, task, train_batch_size, num_train_steps, learning_rate, num_warmup_steps,
            output_dir=None, init_checkpoint=None, lr_schedule=schedule.WARMUP_LINEAR):
    """Trains `task` to num_train_steps optimizer steps; returns the last logged scalars.

    output_dir, init_checkpoint: this training's checkpoint directory and warm
    start, when not the runner's (a job trained in stages). lr_schedule: one of
    `training.schedule.SCHEDULES`.
    """
    o = self.options
    trainer = loop.Trainer(
        self.strategy,
        loop.LoopOptions(
            output_dir=os.fspath(output_dir or self.output_dir),
            train_batch_size=train_batch_size,
            num_train_steps=num_train_steps, save_checkpoints_steps=o.save_checkpoints_steps,
            keep_checkpoint_max=o.keep_checkpoint_max,
            iterations_per_loop=o.iterations_per_loop, log_steps=o.log_steps,
            gradient_accumulation_steps=o.gradient_accumulation_steps, dtype=o.dtype,
            use_xla=o.use_xla),
        model_fn=task.build_model,
        optimizer_fn=lambda: optimizer.create_optimizer(
            learning_rate, num_train_steps, num_warmup_steps, o.optimizer,
            schedule=lr_schedule),
        loss_fn=task.loss,
        dataset_fn=task.dataset_fn(task_lib.TRAIN, train_batch_size),
        metrics_fn=task.metrics,
        init_fn=self._warm_start_fn(task, init_checkpoint or self.init_checkpoint),
        checkpoint_fn=task.new_checkpoint)
    scalars = trainer.train()
    self.model, self._model_task = trainer.model, task
    self.global_step = trainer.global_step
    return scalars

  @staticmethod
  def _warm_start_fn(task, init_checkpoint):
    if not init_checkpoint:
      return None
    return lambda model: logging.info("Warm start: %s",
                                      task.load_weights(model, init_checkpoint))

  def build_model(self, task):
    """`task`'s model, built under the strategy scope and the dtype policy."""
    with self.strategy.scope(), precision.policy_scope(self.options.dtype):
      return task.build_model()

  def trained_model(self, task):
    """The model to evaluate or predict with (see the class)."""
    if self.model is not None and self._model_task is task:
      return self.model
    model = self.build_model(task)
    latest = checkpointing.latest_checkpoint(self.output_dir)
    if latest:
      logging.info("Evaluating %s", task.load_weights(model, latest))
      self.global_step = checkpointing.checkpoint_step(latest)
    elif self.init_checkpoint:
      logging.info("No checkpoint in %s: evaluating init_checkpoint %s", self.output_dir,
                   task.load_weights(model, self.init_checkpoint))
      self.global_step = 0
    else:
      raise NoWeightsError(f"no checkpoint in output_dir {self.output_dir} and no "
                           "--init_checkpoint: nothing to evaluate or predict with "
                           "(train first with --do_train, or pass --init_checkpoint)")
    self.model, self._model_task = model, task
    return model

  def evaluate(self, task, batch_size, max_steps=None):
    """The task's loss and metrics over its EVAL data (up to max_steps batches).

    Writes eval_results.txt (see `write_eval_results`) and returns the results:
    `loss` (mean of the batch losses, as Estimator), the task's metrics and
    `global_step`.
    """
    model = self.trained_model(task)
    results = evaluation.evaluate(self.strategy, model, task.loss,
                                  task.dataset_fn(task_lib.EVAL, batch_size), task.metrics,
                                  max_steps)
    return self.write_eval_results(results)

  def predict(self, task, mode, batch_size, model=None):
    """Yields the model's outputs (numpy) per batch of the task's `mode` data, in order.

    model: predict with this one (e.g. a teacher's), not `trained_model`'s.
    """
    return evaluation.predict(self.strategy, model or self.trained_model(task),
                              task.dataset_fn(mode, batch_size))

  def write_eval_results(self, results):
    """Adds `global_step`, writes output_dir/eval_results.txt (chief only); returns results."""
    results = dict(results, global_step=self.global_step)
    if self.is_chief:
      evaluation.write_eval_results(os.path.join(self.output_dir, EVAL_RESULTS), results)
    return results
