"""Task distillation (TinyBERT's second stage) on a run_classifier task or SQuAD: task_distill.py.

A fine-tuned teacher (run_classifier.py's or run_squad.py's output) teaches a
student on the task's training set (SQuAD: its windows) in two stages, each
with its own epochs:
  intermediate  the layer-wise losses (`distillation.layerwise.LayerwiseDistillationTask`):
                embeddings, hidden states, attention scores;
  prediction    the student's outputs on the teacher's: a classifier's logits, SQuAD's
                start and end logits (`distillation.prediction`).
Each is a task trained by the fine-tuning job (`TaskDistillRun` is a
`ClassifierRun`, `SquadDistillRun` a `SquadRun`), so evaluation, prediction
and export are the fine-tuning script's, on the student. The options are
`distillation.options.TaskDistillOptions` and `SquadDistillOptions`; the
teacher is loaded and checked by `distillation.teacher`.

Layout of `output_dir`, the fine-tuning script's (run_classifier's: eval_results.txt,
test_results.tsv; run_squad's: predictions.json, nbest_predictions.json,
null_odds.json, eval_results.txt) plus:
  student_init/   bert_config.json + bert_model.ckpt (Google's format) of a
                  student made of teacher layers, before any training: the
                  same student fine-tuned directly is the baseline.
  intermediate/   the intermediate stage's checkpoints (student + projections)
                  and TensorBoard events; the prediction stage starts from them.
  model.ckpt-*    the prediction stage's student (Google's names): the fine-tuning
                  script, extract_features.py and the exports read it.
  distillation_summary.json  teacher and student side by side: size, work, dev metrics
                  and agreement (classification: with --do_eval; SQuAD: with --do_predict
                  on a predict_file with answers, EM and F1).
"""

import functools
import json
import os

from absl import logging
import numpy as np
import tensorflow as tf

from classification.run import ClassifierRun
from distillation import layer_map as layer_map_lib
from distillation import teacher as teacher_lib
from distillation.layerwise import LayerwiseDistillationTask
from distillation.options import (BOTH, INTERMEDIATE, PREDICTION, SquadDistillOptions,
                                   resolve_configs)
from distillation.prediction import PredictionDistillationTask, SquadPredictionDistillationTask
from distillation.student import copy_teacher_layers
from distillation.teacher import TeacherTask
from fileio import atomic_write_text
import modeling
from modeling import params
from modeling.config import ConfigError
from squad import records as squad_records
from squad.run import SquadRun
import tokenization
from training import job as job_lib
from training import task as task_lib

STUDENT_INIT = "student_init"
SUMMARY = "distillation_summary.json"
# The SQuAD teacher check's training windows.
CHECK_WINDOWS = 256


class _DistilledStudent:
  """What task_distill.py adds to a fine-tuning job (`ClassifierRun`, `SquadRun`, which come
  after it among the bases): the teacher and student configs, student_init/ and the stages.

  The job supplies `prepare_training(epochs)` (writes the training records of
  `self.task`, returns the steps), `check_teacher()` and `prediction_task()`.
  """

  @functools.cached_property
  def configs(self):
    """(teacher config, student config, the teacher layers the student is made of or None)."""
    o = self.options
    tokenization.validate_case_matches_checkpoint(o.do_lower_case, o.teacher_init_checkpoint)
    teacher_config, student_config, teacher_layers = resolve_configs(o)
    teacher_config.check_seq_length(o.max_seq_length)
    if student_config.vocab_size != teacher_config.vocab_size:
      raise ConfigError(f"the student's vocab_size {student_config.vocab_size} differs from the "
                        f"teacher's {teacher_config.vocab_size}: both read the same ids")
    return teacher_config, student_config, teacher_layers

  @property
  def teacher_config(self):
    return self.configs[0]

  @property
  def teacher_layers(self):
    return self.configs[2]

  def model_config(self):
    """The student's config and its source."""
    o = self.options
    return self.configs[1], (o.student_bert_config_file or o.student_init_checkpoint
                             or o.teacher_bert_config_file or o.teacher_init_checkpoint)

  def teacher_kwargs(self):
    """The prediction task's teacher arguments (`distillation.prediction`)."""
    o = self.options
    return dict(teacher_config=self.teacher_config, teacher_checkpoint=o.teacher_init_checkpoint,
                temperature=o.temperature, teacher_layers=self.teacher_layers)

  def write_student_init(self):
    """output_dir/student_init/: the student made of teacher layers, in Google's format."""
    o = self.options
    directory = os.path.join(o.output_dir, STUDENT_INIT)
    teacher = modeling.build_encoder(self.teacher_config)
    modeling.load_checkpoint(teacher, o.teacher_init_checkpoint)
    student = modeling.build_encoder(self.config)
    copy_teacher_layers(teacher, student, self.teacher_layers)
    tf.io.gfile.makedirs(directory)
    modeling.save_config(self.config, directory, "the student's config")
    modeling.save_google_checkpoint(student, os.path.join(directory, "bert_model.ckpt"))
    logging.info("Wrote the student made of teacher layers %s to %s (the fine-tuning script "
                 "reads it as --init_checkpoint: the baseline)", self.teacher_layers, directory)

  def write_side_by_side(self, teacher_results, student_results, agreement):
    """output_dir/distillation_summary.json: the teacher's and the student's size, work and
    dev metrics, and how often they agree (None: not written); speed is
    bench/distillation.py's."""
    o = self.options
    summary = {}
    for name, model, config, results in (
        ("teacher", self.teacher_model(), self.teacher_config, teacher_results),
        ("student", self.runner.trained_model(self.task), self.config, student_results)):
      summary[name] = {
          "parameters": params.count_model_parameters(model)["total"],
          "forward_flops": params.forward_flops(config, o.max_seq_length),
          "dev": {k: float(v) for k, v in results.items() if k != "global_step"}}
    if agreement is not None:
      summary["agreement"] = agreement
    path = os.path.join(o.output_dir, SUMMARY)
    atomic_write_text(path, json.dumps(summary, indent=2) + "\n")
    logging.info("Distillation summary (%s):\n%s", path, json.dumps(summary, indent=2))

  def train(self):
    """Checks the teacher, then runs the stages; returns each stage's last logged scalars."""
    o = self.options
    if o.check_teacher:
      self.check_teacher()
    if self.teacher_layers and self.runner.is_chief:
      self.write_student_init()
    scalars = {}
    intermediate_dir = os.path.join(o.output_dir, INTERMEDIATE)
    if o.stage in (INTERMEDIATE, BOTH):
      steps = self.prepare_training(o.intermediate_epochs)
      mapped = layer_map_lib.layer_map(o.layer_map, self.config.num_hidden_layers,
                                       self.teacher_config.num_hidden_layers)
      logging.info("Intermediate stage: student layer m learns from teacher layer %s",
                   ", ".join(f"{m}<-{t}" for m, t in enumerate(mapped)))
      task = _IntermediateTask(
          self.task, teacher_config=self.teacher_config,
          teacher_checkpoint=o.teacher_init_checkpoint, student_config=self.config,
          layer_map=mapped, weights=o.loss_weights(), projection=o.projection,
          padding=o.padded_positions, teacher_layers=self.teacher_layers)
      logging.info("Intermediate stage: learning rate %s (--intermediate_lr_schedule=%s), "
                   "padded positions %s in the MSEs", o.learning_rate,
                   o.intermediate_lr_schedule, o.padded_positions)
      scalars[INTERMEDIATE] = self.train_task(task, steps, output_dir=intermediate_dir,
                                              init_checkpoint=o.student_init_checkpoint,
                                              lr_schedule=o.intermediate_lr_schedule)
    if o.stage in (PREDICTION, BOTH):
      steps = self.prepare_training(o.prediction_epochs)
      start = tf.train.latest_checkpoint(intermediate_dir) or o.student_init_checkpoint
      logging.info("Prediction stage from %s", start or "the student's initial weights")
      scalars[PREDICTION] = self.train_task(self.prediction_task(), steps,
                                            init_checkpoint=start)
    return scalars


class TaskDistillRun(_DistilledStudent, ClassifierRun):
  """One task_distill.py invocation on a classification task: run_classifier's steps with a
  distilled student."""

  def __init__(self, options):
    self._teacher_model = self._teacher_task = self._teacher_dev = None  # built when needed
    super().__init__(options)

  def _classifier_kwargs(self, config):
    task = self.task
    return dict(bert_config=config, num_labels=task.num_labels,
                max_seq_length=task.max_seq_length, record_files=task.record_files,
                task_name=task.task_name, is_regression=task.is_regression, seed=task.seed)

  def prediction_task(self):
    return PredictionDistillationTask(**self.teacher_kwargs(),
                                      **self._classifier_kwargs(self.config))

  # ----- the teacher

  def teacher_model(self):
    """The teacher classifier with its fine-tuned weights (built once)."""
    if self._teacher_model is None:
      teacher = TeacherTask(**self._classifier_kwargs(self.teacher_config))
      self._teacher_model = self.runner.build_model(teacher)
      logging.info("Teacher: %s",
                   teacher.load_weights(self._teacher_model, self.options.teacher_init_checkpoint))
      self._teacher_task = teacher
    return self._teacher_model

  def teacher_dev(self):
    """(the teacher's dev logits, labels, eval results), computed once."""
    if self._teacher_dev is None:
      model = self.teacher_model()
      logits, labels = self.dev_logits(self._teacher_task, model)
      results = self._teacher_task.eval_results(logits, labels, self.options.eval_batch_size)
      logging.info("Teacher on dev: %s", ", ".join(f"{k} = {v:.4f}" for k, v in results.items()))
      self._teacher_dev = logits, labels, results
    return self._teacher_dev

  def check_teacher(self):
    """TeacherError when the teacher does no better on dev than a constant answer."""
    _, labels, results = self.teacher_dev()
    teacher_lib.check_better_than_chance(results, labels, self.is_regression,
                                         self.options.teacher_init_checkpoint)

  # ----- evaluation

  def evaluate(self):
    """run_classifier's eval_results.txt for the student, and the side-by-side summary."""
    o = self.options
    logits, labels = self.dev_logits()
    results = self.runner.write_eval_results(
        self.task.eval_results(logits, labels, o.eval_batch_size))
    if self.runner.is_chief:
      self.write_summary(logits, results)
    return results

  def write_summary(self, student_logits, student_results):
    """distillation_summary.json with the dev logits' agreement (not for regression)."""
    teacher_logits, _, teacher_results = self.teacher_dev()
    agreement = (None if self.is_regression else
                 float(np.mean(student_logits.argmax(-1) == teacher_logits.argmax(-1))))
    self.write_side_by_side(teacher_results, student_results, agreement)


class SquadDistillRun(_DistilledStudent, SquadRun):
  """One task_distill.py --task_name=squad invocation: run_squad's steps (predictions,
  official metrics, export) with a distilled student."""

  def __init__(self, options):
    self._teacher_model = self._teacher_task = None  # built when needed
    super().__init__(options)

  def teacher_model(self):
    """The teacher SQuAD model with its fine-tuned weights (built once)."""
    if self._teacher_model is None:
      task = self.task
      teacher = teacher_lib.SquadTeacherTask(self.teacher_config, task.max_seq_length,
                                             task.record_files, seed=task.seed)
      self._teacher_model = self.runner.build_model(teacher)
      logging.info("Teacher: %s",
                   teacher.load_weights(self._teacher_model, self.options.teacher_init_checkpoint))
      self._teacher_task = teacher
    return self._teacher_model

  def check_teacher(self):
    """TeacherError when the teacher has no SQuAD span layer, or finds the answer's start and
    end in those of the first CHECK_WINDOWS training windows that hold it (a sample:
    train.tf_record's examples are shuffled) no more often than a constant position."""
    o = self.options
    model = self.teacher_model()
    self.prepare_training(o.prediction_epochs if o.stage == PREDICTION else o.intermediate_epochs)
    spec = squad_records.feature_spec(o.max_seq_length, is_training=True)
    windows = (tf.data.TFRecordDataset(self.task.record_files[task_lib.TRAIN])
               .take(CHECK_WINDOWS).batch(o.predict_batch_size)
               .map(lambda r: tf.io.parse_example(r, spec)))
    logits, positions = ([], []), ([], [])
    for batch in windows:
      outputs = model({k: tf.cast(batch[k], tf.int32) for k in modeling.INPUT_NAMES},
                      training=False)
      for i, end in enumerate(("start", "end")):
        logits[i].append(outputs[f"{end}_logits"].numpy())
        positions[i].append(batch[f"{end}_positions"].numpy())
    checked = teacher_lib.check_spans_better_than_chance(
        [np.concatenate(x) for x in logits], [np.concatenate(x) for x in positions],
        o.teacher_init_checkpoint)
    if checked is None:
      logging.warning("None of the first %d training windows holds an answer: the teacher's "
                      "answers are not checked", CHECK_WINDOWS)
    else:
      logging.info("Teacher on the training windows that hold the answer: start and end "
                    "accuracy %.4f (a constant position, plus margin: %.4f)", *checked)

  def predict(self):
    """run_squad's predictions; with answers in predict_file, the teacher's on the same
    windows and the side-by-side summary (agreement: the share of questions both answer
    alike)."""
    predictions, results = super().predict()
    if results is not None and self.runner.is_chief:
      dataset, examples, _ = self.predict_input
      model = self.teacher_model()
      teacher = self._answers(
          examples, self.predict_features,
          self.raw_results(self.predict_features, self._teacher_task, model),
          self.null_score_diff_threshold)
      agreement = float(np.mean([teacher.predictions[qid] == answer
                                 for qid, answer in predictions.items()]))
      self.write_side_by_side(self._evaluate(dataset, teacher), results, agreement)
    return predictions, results

  def prediction_task(self):
    task = self.task
    return SquadPredictionDistillationTask(
        **self.teacher_kwargs(), bert_config=self.config, max_seq_length=task.max_seq_length,
        record_files=task.record_files, seed=task.seed)


class _IntermediateTask(LayerwiseDistillationTask):
  """The layer-wise losses on the training records of `data_task` (the job's task)."""

  def __init__(self, data_task, **kwargs):
    super().__init__(**kwargs)
    self.data_task = data_task

  def dataset_fn(self, mode, batch_size):
    return self.data_task.dataset_fn(mode, batch_size)


def run_task_distill(options):
  """Runs `options` (`distillation.options.SquadDistillOptions` or `TaskDistillOptions`);
  returns the steps' results."""
  run_class = SquadDistillRun if isinstance(options, SquadDistillOptions) else TaskDistillRun
  return job_lib.run_job(run_class, options)
