"""`run(RunConfig)`: Google's run_pretraining (train and/or evaluate) on `training`.

Layout of `output_dir` (one story for every consumer):
  model.ckpt-<step>.*, checkpoint   `modeling.new_checkpoint`s: weights by
      Google name, optimizer slots, global step and (single worker) the input
      position. A rerun resumes from the latest; `modeling.load_checkpoint`
      (run_classifier, extract_features, run_pretraining's init_checkpoint)
      reads the weights from the directory or any prefix.
  bert_config.json                  the model's config (`modeling.load_config`).
  events.out.tfevents.*             TensorBoard scalars.
  eval_results.txt                  Google's eval keys (do_eval).
"""

import dataclasses
import os
from typing import Optional

from absl import logging
import tensorflow as tf
import tf_keras

import modeling
from modeling.checkpoints.auto import GOOGLE_CONFIG_NAME
from pretraining import inputs, task
from training import checkpointing, evaluation, loop, optimizer, precision
from training import strategy as strategy_lib

EVAL_RESULTS_NAME = "eval_results.txt"


@dataclasses.dataclass(frozen=True)
class RunConfig:
  """run_pretraining.py's flags: Google's names and defaults, then ours."""
  bert_config_file: str
  input_file: str
  output_dir: str
  init_checkpoint: Optional[str] = None
  max_seq_length: int = 128
  max_predictions_per_seq: int = 20
  do_train: bool = False
  do_eval: bool = False
  train_batch_size: int = 32
  eval_batch_size: int = 8
  learning_rate: float = 5e-5
  num_train_steps: int = 100000
  num_warmup_steps: int = 10000
  save_checkpoints_steps: int = 1000
  iterations_per_loop: int = 1000
  max_eval_steps: int = 100
  use_tpu: bool = False
  tpu_name: Optional[str] = None
  tpu_zone: Optional[str] = None
  gcp_project: Optional[str] = None
  master: Optional[str] = None
  num_tpu_cores: int = 8
  distribution_strategy: str = "one_device"
  num_gpus: Optional[int] = None
  dtype: str = "float32"
  use_xla: bool = False
  optimizer: str = "adamw"
  gradient_accumulation_steps: int = 1
  log_steps: int = 100
  keep_checkpoint_max: int = 5
  seed: Optional[int] = None

  def validate(self):
    if not (self.do_train or self.do_eval):
      raise ValueError("At least one of `do_train` or `do_eval` must be True.")
    if self.optimizer not in optimizer.OPTIMIZERS:
      raise ValueError(f"optimizer must be one of {optimizer.OPTIMIZERS}, "
                       f"got {self.optimizer!r}")
    for name in ("max_seq_length", "max_predictions_per_seq", "eval_batch_size",
                 "max_eval_steps"):
      if getattr(self, name) <= 0:
        raise ValueError(f"{name} must be positive, got {getattr(self, name)}")


def build_strategy(config):
  """The strategy named by the flags; use_tpu=True means the tpu strategy."""
  name = "tpu" if config.use_tpu else config.distribution_strategy
  return strategy_lib.build_strategy(
      name, num_gpus=config.num_gpus, tpu_name=config.tpu_name or config.master,
      tpu_zone=config.tpu_zone, gcp_project=config.gcp_project)


def warm_start_fn(init_checkpoint):
  """init_fn loading `init_checkpoint` (Google TF1, HF or ours), or None."""
  if not init_checkpoint:
    return None
  return lambda model: logging.info(
      "Warm start: %s", modeling.load_checkpoint(model, init_checkpoint).summary())


def evaluate(config, strategy, model, files, global_step):
  """Runs max_eval_steps batches; writes eval_results.txt; returns the results."""
  dataset_fn = inputs.make_dataset_fn(files, config.eval_batch_size, config.max_seq_length,
                                      config.max_predictions_per_seq, is_training=False)
  results = evaluation.evaluate(strategy, model, task.loss_fn, dataset_fn, task.metrics_fn,
                                config.max_eval_steps)
  results["global_step"] = global_step
  if strategy_lib.is_chief(strategy):
    evaluation.write_eval_results(os.path.join(config.output_dir, EVAL_RESULTS_NAME), results)
  return results


def eval_model(config, strategy, bert_config):
  """For do_eval alone: the model of output_dir's latest checkpoint, else of init_checkpoint.

  Returns (model, global step); like Estimator, step 0 without a checkpoint.
  """
  with strategy.scope(), precision.policy_scope(config.dtype):
    model = task.model_fn(bert_config, config.max_seq_length, config.max_predictions_per_seq)()
  latest = tf.train.latest_checkpoint(config.output_dir)
  if latest:
    logging.info("Evaluating %s", modeling.load_checkpoint(model, latest).summary())
    return model, checkpointing.checkpoint_step(latest)
  if config.init_checkpoint:
    warm_start_fn(config.init_checkpoint)(model)
  else:
    logging.warning("No checkpoint in %s and no init_checkpoint: evaluating random weights",
                    config.output_dir)
  return model, 0


def run(config):
  """Trains and/or evaluates as the flags say; returns {'train': scalars, 'eval': results}.

  Raises inputs.InputError, modeling.ConfigError / CheckpointError,
  FileNotFoundError, ValueError (bad flags) and loop.NonFiniteLossError.
  """
  config.validate()
  bert_config = modeling.BertConfig.from_json_file(config.bert_config_file)
  # First of all TensorFlow work: multi-worker collectives are set up at startup.
  strategy = build_strategy(config)
  files = inputs.resolve_input_files(config.input_file)
  inputs.check_records(files, config.max_seq_length, config.max_predictions_per_seq,
                       bert_config)
  logging.info("%d input file(s): %s%s", len(files), files[0],
               ", ..." if len(files) > 1 else "")
  if config.seed is not None:
    tf_keras.utils.set_random_seed(config.seed)
  tf.io.gfile.makedirs(config.output_dir)
  if strategy_lib.is_chief(strategy):
    bert_config.to_json_file(os.path.join(config.output_dir, GOOGLE_CONFIG_NAME))
  results = {}
  if config.do_train:
    trainer = loop.Trainer(
        strategy,
        loop.TrainConfig(
            output_dir=config.output_dir, train_batch_size=config.train_batch_size,
            num_train_steps=config.num_train_steps,
            save_checkpoints_steps=config.save_checkpoints_steps,
            keep_checkpoint_max=config.keep_checkpoint_max,
            iterations_per_loop=config.iterations_per_loop, log_steps=config.log_steps,
            gradient_accumulation_steps=config.gradient_accumulation_steps,
            dtype=config.dtype, use_xla=config.use_xla),
        model_fn=task.model_fn(bert_config, config.max_seq_length,
                               config.max_predictions_per_seq),
        optimizer_fn=lambda: optimizer.create_optimizer(
            config.learning_rate, config.num_train_steps, config.num_warmup_steps,
            config.optimizer),
        loss_fn=task.loss_fn,
        dataset_fn=inputs.make_dataset_fn(
            files, config.train_batch_size, config.max_seq_length,
            config.max_predictions_per_seq, is_training=True, seed=config.seed),
        metrics_fn=task.metrics_fn,
        init_fn=warm_start_fn(config.init_checkpoint),
        checkpoint_fn=modeling.new_checkpoint)
    results["train"] = trainer.train()
    model, global_step = trainer.model, trainer.global_step
  if config.do_eval:
    if not config.do_train:
      model, global_step = eval_model(config, strategy, bert_config)
    results["eval"] = evaluate(config, strategy, model, files, global_step)
  return results
