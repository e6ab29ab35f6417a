"""The library behind `run_classifier.py`: fine-tune, evaluate, predict and export.

Mirrors Google's `run_classifier.py`: the classifier head on the pooled [CLS]
output, the optimizer with warmup_proportion warm-up and linear decay over
num_train_steps = int(len(train_examples) / train_batch_size * num_train_epochs),
TFRecords `train.tf_record` / `eval.tf_record` / `predict.tf_record` in
output_dir, `eval_results.txt` and `test_results.tsv`; also the model's
`bert_config.json` beside the checkpoints, so output_dir is an init_checkpoint
(or a distillation teacher) without --bert_config_file. The task
(`classification.task`) runs as a `training.job.FineTuningJob`: strategies, mixed
precision, XLA, kernels, accumulation, checkpoints and resume in output_dir,
weights from `init_checkpoint` in any format `modeling.load_checkpoint` reads.
"""

import dataclasses
import hashlib
import json
import os
import random
from typing import Optional

from absl import logging
import numpy as np

from classification import labels as labels_lib
from classification import outputs
from classification import registry
from classification import tfrecords
from classification.features import pad_to_batch_multiple
from classification.options import DataOptions
from classification.task import ClassifierTask
from cli import FlagError
from cli.options import option, required
from fileio import (InputError, atomic_write_text, count_records, exists, isdir,
                    open_file)
import modeling
from training import job as job_lib
from training import runtime
from training import task as task_lib

RECORD_FILES = {task_lib.TRAIN: "train.tf_record", task_lib.EVAL: "eval.tf_record",
                task_lib.PREDICT: "predict.tf_record"}
TEST_RESULTS = "test_results.tsv"


@dataclasses.dataclass(frozen=True, kw_only=True)
class ClassifierOptions(DataOptions, job_lib.FineTuningOptions):
  """run_classifier.py's flags (Google's names and defaults): the data's, fine-tuning's (the
  runtime's among them) and these."""
  output_dir: str = required("Where checkpoints, TFRecords and results are written.")
  do_eval: bool = option(False, "Whether to run eval on the dev set.")
  do_predict: bool = option(False, "Whether to run the model on the test set.")
  eval_batch_size: int = option(8, "Total batch size for eval.")
  predict_batch_size: int = option(8, "Total batch size for predict.")
  export_dir: Optional[str] = option(
      None, "Write a SavedModel here after training (a new or empty directory, outside "
      "output_dir).")
  overwrite_export: bool = option(
      False, "Replace export_dir when it holds a SavedModel written by run_classifier.")
  export_xla: bool = option(
      False, "The SavedModel runs a one-row request XLA-compiled (its length padded to a "
      "multiple of 8; each new length compiles once, about 2 s): faster at batch 1 on CPU. "
      "TF Serving runs it only with --xla_cpu_compilation_enabled=true.")
  aug_train: bool = option(False, "Train on train_aug.tsv (augment_data.py's output) instead "
                           "of the task's training file, its rows in a random order seeded "
                           "by --seed.")

  def processor_options(self):
    """`task_options`, with `aug_train` when set."""
    return dict(self.task_options, aug_train=True) if self.aug_train else self.task_options

  def __post_init__(self):
    super().__post_init__()
    if not (self.do_train or self.do_eval or self.do_predict or self.export_dir):
      raise FlagError("at least one of do_train, do_eval, do_predict or export_dir must be set")
    if self.export_xla and not self.export_dir:
      raise FlagError("--export_xla is a setting of the export: pass --export_dir too")
    for name in ("max_seq_length", "eval_batch_size", "predict_batch_size"):
      runtime.check_positive(name, getattr(self, name))


class ClassifierRun(job_lib.FineTuningJob):
  """One run_classifier invocation: data and the train/eval/predict/export steps."""

  def __init__(self, options):
    o = options
    self.processor = registry.get_processor(o.task_name, **o.processor_options())
    if not isdir(o.data_dir) and (o.do_train or o.do_eval or o.do_predict):
      raise InputError(f"--data_dir {o.data_dir!r} is not a directory")
    self.is_regression = bool(getattr(self.processor, "is_regression", False))
    super().__init__(options)
    self._train_examples = None
    self._task = None

  def export_module(self):
    from classification import export  # pylint: disable=import-outside-toplevel
    return export

  @property
  def strategy(self):
    return self.runner.strategy

  # ----- data

  def train_examples(self):
    """The training examples in file order (Google's), but with `aug_train` in a random order
    seeded by --seed (0 without): augment_data.py writes each sentence's variants together,
    which the pipeline's 100-record shuffle buffer cannot spread over the epoch (TinyBERT's
    loader draws from all rows), so batches would repeat a few sentences."""
    o = self.options
    if self._train_examples is None:
      examples = self.processor.get_train_examples(o.data_dir)
      if not examples:
        raise FlagError(f"no training examples in {o.data_dir}")
      if o.processor_options().get("aug_train"):
        random.Random(0 if o.seed is None else o.seed).shuffle(examples)
      self._train_examples = examples
    return self._train_examples

  def label_list(self):
    """Labels in id order (None for regression); saved to output_dir for later runs."""
    if self.is_regression:
      return None
    try:
      return self.processor.get_labels()
    except ValueError:  # a generic task whose labels come from its training file
      path = os.path.join(self.options.output_dir, labels_lib.LABEL_LIST_FILE)
      if self.options.do_train:
        self.train_examples()
      elif exists(path):
        self.processor.set_labels(labels_lib.load_label_list(path)[0])
      else:
        raise FlagError(f"task {self.options.task_name!r} needs its labels: train first, or "
                        f"put {labels_lib.LABEL_LIST_FILE} in {self.options.output_dir}"
                        ) from None
      return self.processor.get_labels()

  @property
  def task(self):
    """The ClassifierTask (built once the labels are known)."""
    if self._task is None:
      o = self.options
      self._task = ClassifierTask(
          self.config, 1 if self.is_regression else len(self.label_list()), o.max_seq_length,
          {mode: os.path.join(o.output_dir, name) for mode, name in RECORD_FILES.items()},
          registry.canonical_task_name(o.task_name), self.is_regression,
          seed=o.seed)
    return self._task

  def _write_records(self, mode, examples):
    """Writes the mode's TFRecord file unless the cached one was made from the same input."""
    o = self.options
    path = self.task.record_files[mode]
    digest = hashlib.sha256(json.dumps([
        o.max_seq_length, o.do_lower_case, self.label_list(), _file_digest(o.vocab_file),
        [vars(e) for e in examples]],
        default=str).encode("utf-8")).hexdigest()
    stamp = path + ".sha256"
    if exists(path) and exists(stamp):
      with open_file(stamp, "rb") as f:
        cached = f.read().decode("utf-8").strip() == digest
    else:
      cached = False
    if cached:
      cached = _cache_intact(path, len(examples))
    if cached:
      logging.info("Reusing %s (%d examples)", path, len(examples))
    else:
      tfrecords.file_based_convert_examples_to_features(
          examples, self.label_list(), o.max_seq_length, self.tokenizer, path)
      atomic_write_text(stamp, digest + "\n")

  # ----- steps

  def prepare_training(self, num_train_epochs):
    """Writes the training records, the label list and bert_config.json (so output_dir is a
    checkpoint directory every script reads); returns num_train_steps for the epochs."""
    o = self.options
    if self.runner.is_chief:
      modeling.save_config(self.config, o.output_dir, self.config_source)
    examples = self.train_examples()
    num_train_steps = self.train_steps(len(examples), num_train_epochs)
    labels_lib.save_label_list(o.output_dir, self.label_list() or [],
                               is_regression=self.is_regression)
    self._write_records(task_lib.TRAIN, examples)
    logging.info("***** Running training *****\n  Num examples = %d\n  Batch size = %d\n"
                 "  Num steps = %d", len(examples), o.train_batch_size, num_train_steps)
    return num_train_steps

  def train(self):
    o = self.options
    return self.train_task(self.task, self.prepare_training(o.num_train_epochs))

  def _predict(self, mode, batch_size, task=None, model=None):
    """Stacked model outputs over the mode's record file, in file order.

    task, model: whose outputs (default: the run's task and trained model).
    """
    batches = self.runner.predict(task or self.task, mode, batch_size, model)
    return np.concatenate([np.asarray(b, np.float32) for b in batches], axis=0)

  def dev_logits(self, task=None, model=None):
    """The dev set's logits [n, num_labels] and labels [n] (ids, or scores for regression).

    task, model: whose logits (default: the run's task and trained model).
    """
    o = self.options
    examples = self.processor.get_dev_examples(o.data_dir)
    if not examples:
      raise FlagError(f"no dev examples in {o.data_dir}")
    self._write_records(task_lib.EVAL, examples)
    logging.info("***** Running evaluation *****\n  Num examples = %d\n  Batch size = %d",
                 len(examples), o.eval_batch_size)
    logits = self._predict(task_lib.EVAL, o.eval_batch_size, task, model)
    labels = np.array([float(e.label) for e in examples] if self.is_regression
                      else [self.label_list().index(e.label) for e in examples])
    return logits, labels

  def evaluate(self):
    """Dev-set results, written to eval_results.txt: Google's keys plus the task's metrics."""
    logits, labels = self.dev_logits()
    return self.runner.write_eval_results(
        self.task.eval_results(logits, labels, self.options.eval_batch_size))

  def predict(self):
    """test_results.tsv: class probabilities (or the regression score), one line per example."""
    o = self.options
    examples = self.processor.get_test_examples(o.data_dir)
    self._write_records(task_lib.PREDICT, pad_to_batch_multiple(examples, o.predict_batch_size))
    logging.info("***** Running prediction *****\n  Num examples = %d (%d padding)\n"
                 "  Batch size = %d", len(examples),
                 -len(examples) % o.predict_batch_size, o.predict_batch_size)
    logits = self._predict(task_lib.PREDICT, o.predict_batch_size)
    if self.is_regression:
      predictions = logits[:, 0]
    else:
      shifted = logits - logits.max(axis=-1, keepdims=True)
      predictions = np.exp(shifted) / np.exp(shifted).sum(axis=-1, keepdims=True)
    outputs.write_test_results(os.path.join(o.output_dir, TEST_RESULTS), predictions,
                               len(examples))
    return predictions[:len(examples)]

  def export(self):
    from classification import export  # pylint: disable=import-outside-toplevel
    o = self.options
    return export.export_saved_model(self.runner.trained_model(self.task), o.export_dir,
                                     o.vocab_file, o.do_lower_case, o.max_seq_length,
                                     self.label_list(), self.is_regression,
                                     xla_one_row=o.export_xla)


def run_classifier(options):
  """Runs `options` (a ClassifierOptions); returns the steps' results."""
  return job_lib.run_job(ClassifierRun, options)


def _cache_intact(path, num_records):
  """Whether the cached record file `path` holds its `num_records` records undamaged (a copy
  cut short, a damaged disk); if not, a warning says it is written again."""
  try:
    found = count_records(path)
  except InputError as e:
    problem = str(e)
  else:
    if found == num_records:
      return True
    problem = f"{path} holds {found} records, expected {num_records}"
  logging.warning("Writing %s again: %s", path, problem)
  return False


def _file_digest(path):
  with open_file(path, "rb") as f:
    return hashlib.sha256(f.read()).hexdigest()
