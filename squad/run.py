"""The library behind `run_squad.py`: fine-tune on SQuAD, predict, evaluate.

Mirrors Google's `run_squad.py`: training examples shuffled with
`random.Random(12345)` and converted to `train.tf_record`, num_train_steps =
int(len(train_examples) / train_batch_size * num_train_epochs), the predict
file converted to `eval.tf_record`, and `predictions.json`,
`nbest_predictions.json` (and `null_odds.json` for v2) in output_dir. Beyond
Google: the model's `bert_config.json` beside the checkpoints (so output_dir
needs no --bert_config_file later, for --do_predict or as an init_checkpoint);
when the predict file has answers, the official metrics go to
`eval_results.txt`, and `tune_null_threshold` does Google's README recipe for
v2.0 in one run (predict, find the official best_f1_thresh over null_odds,
write the predictions with it: no second pass of the model), and
`export_dir` gets a SavedModel that answers raw-text questions (`squad.export`;
with the tuned threshold when there is one). The task (`squad.task`) runs as a
`training.job.FineTuningJob`.
"""

import dataclasses
import math
import os
import random
import time
from typing import Optional

from absl import logging

from cli import FlagError
from cli.options import option, required
import modeling
from squad import evaluation
from squad import predictions as predictions_lib
from squad import records
from squad.examples import examples_from_dataset, read_squad_examples, read_squad_file
from squad.features import convert_examples_to_features
from squad.task import SquadTask
from training import job as job_lib
from training import runtime
from training import task as task_lib

RECORD_FILES = {task_lib.TRAIN: "train.tf_record", task_lib.PREDICT: "eval.tf_record"}
PREDICTIONS, NBEST, NULL_ODDS = "predictions.json", "nbest_predictions.json", "null_odds.json"
TRAIN_SHUFFLE_SEED = 12345  # Google's random.Random(12345) over the training examples


@dataclasses.dataclass(frozen=True, kw_only=True)
class SquadOptions(job_lib.FineTuningOptions):
  """run_squad.py's flags (Google's names and defaults): fine-tuning's (the runtime's among
  them) and these."""
  vocab_file: str = required("The vocabulary file the model was trained on.")
  output_dir: str = required("Where checkpoints, TFRecords and predictions go.")
  train_file: Optional[str] = option(None, "SQuAD json for training, e.g. train-v1.1.json.")
  predict_file: Optional[str] = option(
      None, "SQuAD json for predictions, e.g. dev-v1.1.json or test-v1.1.json.")
  do_lower_case: bool = option(True, "Lower-case the input (uncased models).")
  max_seq_length: int = option(384, "Maximum total sequence length after WordPiece.")
  doc_stride: int = option(128, "How many tokens apart the windows over a long document start.")
  max_query_length: int = option(
      64, "Question tokens kept; longer questions are truncated to this length.")
  do_predict: bool = option(False, "Whether to run predictions on predict_file.")
  predict_batch_size: int = option(8, "Total batch size for predictions.")
  n_best_size: int = option(
      20, "n-best predictions to keep per question in nbest_predictions.json.")
  max_answer_length: int = option(30, "Longest answer, in WordPiece tokens.")
  verbose_logging: bool = option(
      False, "Log why a prediction could not be aligned to the original text.")
  version_2_with_negative: bool = option(
      False, "SQuAD 2.0: some questions have no answer in the context.")
  null_score_diff_threshold: float = option(
      0.0, "Predict no answer when null score - best non-null score > this.")
  tune_null_threshold: bool = option(
      False, "v2 with answers in predict_file: write the predictions with the threshold that "
      "gives the official best F1 there (Google's README recipe in one run).")
  export_dir: Optional[str] = option(
      None, "Write a SavedModel that answers raw-text questions here after training and "
      "predicting (a new or empty directory, outside output_dir).")
  overwrite_export: bool = option(
      False, "Replace export_dir when it holds a SavedModel written by run_squad.")

  def __post_init__(self):
    super().__post_init__()
    if not (self.do_train or self.do_predict or self.export_dir):
      raise FlagError("At least one of `do_train` or `do_predict` must be True (or `export_dir` "
                      "set).")
    if self.do_train and not self.train_file:
      raise FlagError("If `do_train` is True, then `train_file` must be specified.")
    if self.do_predict and not self.predict_file:
      raise FlagError("If `do_predict` is True, then `predict_file` must be specified.")
    for name in ("max_seq_length", "doc_stride", "max_query_length", "predict_batch_size",
                 "n_best_size", "max_answer_length"):
      runtime.check_positive(name, getattr(self, name))
    if self.tune_null_threshold and not self.version_2_with_negative:
      raise FlagError("--tune_null_threshold is for --version_2_with_negative")
    if self.max_seq_length <= self.max_query_length + 3:
      raise FlagError(f"The max_seq_length ({self.max_seq_length}) must be greater than "
                      f"max_query_length ({self.max_query_length}) + 3")


class SquadRun(job_lib.FineTuningJob):
  """One run_squad invocation: train, predict (and evaluate when answers are known), export."""

  def __init__(self, options):
    super().__init__(options)
    o = self.options
    self.null_score_diff_threshold = o.null_score_diff_threshold  # tune_null_threshold sets it
    self.task = SquadTask(self.config, o.max_seq_length,
                          {mode: os.path.join(o.output_dir, name)
                           for mode, name in RECORD_FILES.items()},
                          seed=o.seed)
    self.predict_input = None
    self.predict_features = None  # predict's windows of predict_file
    self._num_train_examples = self._num_train_features = None  # prepare_training's

  def export_module(self):
    from squad import export  # pylint: disable=import-outside-toplevel
    return export

  def _features(self, mode, examples):
    """Converts `examples` and writes the mode's TFRecord file; returns the features."""
    o = self.options
    is_training = mode == task_lib.TRAIN
    features = convert_examples_to_features(examples, self.tokenizer, o.max_seq_length,
                                            o.doc_stride, o.max_query_length, is_training)
    records.write_features(features, self.task.record_files[mode], is_training)
    return features

  def prepare_training(self, num_train_epochs):
    """Writes bert_config.json (so output_dir is a checkpoint directory every script reads)
    and train.tf_record (once per run); returns num_train_steps for the epochs."""
    o = self.options
    if self._num_train_examples is None:
      examples, skipped = read_squad_examples(o.train_file, True, o.version_2_with_negative)
      if skipped:
        logging.warning("Skipped %d of %d training questions whose answer was not found in the "
                        "context", len(skipped), len(examples) + len(skipped))
      if not examples:
        raise FlagError(f"no training examples in {o.train_file}")
      random.Random(TRAIN_SHUFFLE_SEED).shuffle(examples)
      self.train_steps(len(examples), num_train_epochs)  # no step: an error before any work
      if self.runner.is_chief:
        modeling.save_config(self.config, o.output_dir, self.config_source)
      features = self._features(task_lib.TRAIN, examples)
      self._num_train_examples, self._num_train_features = len(examples), len(features)
    num_train_steps = self.train_steps(self._num_train_examples, num_train_epochs)
    logging.info("***** Running training *****\n  Num orig examples = %d\n"
                 "  Num split examples = %d\n  Batch size = %d\n  Num steps = %d",
                 self._num_train_examples, self._num_train_features, o.train_batch_size,
                 num_train_steps)
    return num_train_steps

  def train(self):
    return self.train_task(self.task, self.prepare_training(self.options.num_train_epochs))

  def check_inputs(self):
    """Reads predict_file (`read_predict_file`) before any training."""
    if self.options.do_predict:
      self.predict_input = self.read_predict_file()

  def read_predict_file(self):
    """(dataset, examples, has_answers) of predict_file."""
    o = self.options
    dataset = read_squad_file(o.predict_file)
    examples, _ = examples_from_dataset(dataset, o.predict_file, False,
                                        o.version_2_with_negative)
    has_answers = evaluation.has_gold_answers(dataset)
    if has_answers:
      evaluation.check_dataset(dataset, o.predict_file)
    elif o.tune_null_threshold:
      raise FlagError(f"--tune_null_threshold needs answers in --predict_file; "
                      f"{o.predict_file} has none")
    return dataset, examples, has_answers

  def predict(self):
    """Writes Google's prediction files; returns ({id: answer}, evaluation results or None).

    When predict_file has answers, the official metrics go to eval_results.txt.
    """
    o = self.options
    dataset, examples, has_answers = self.predict_input
    features = self._features(task_lib.PREDICT, examples)
    logging.info("***** Running predictions *****\n  Num orig examples = %d\n"
                 "  Num split examples = %d\n  Batch size = %d",
                 len(examples), len(features), o.predict_batch_size)
    self.predict_features = features
    results = self.raw_results(features)
    if o.tune_null_threshold:
      self.null_score_diff_threshold = self._tuned_threshold(dataset, examples, features,
                                                             results)
    outputs = self._answers(examples, features, results, self.null_score_diff_threshold)
    evaluation_results = None
    if has_answers:
      extra = ({"null_score_diff_threshold": self.null_score_diff_threshold}
               if o.tune_null_threshold else {})
      evaluation_results = self._evaluate(dataset, outputs, **extra)
    predictions_lib.write_predictions(
        outputs, os.path.join(o.output_dir, PREDICTIONS), os.path.join(o.output_dir, NBEST),
        os.path.join(o.output_dir, NULL_ODDS) if o.version_2_with_negative else None)
    if evaluation_results is not None:
      evaluation_results = self.runner.write_eval_results(evaluation_results)
    return outputs.predictions, evaluation_results

  def raw_results(self, features, task=None, model=None):
    """The RawResults (start and end logits) of the predict windows `features` (written to
    the PREDICT records), from `task` and `model` (default: the run's, trained)."""
    results = []
    start_time = time.perf_counter()
    for batch in self.runner.predict(task or self.task, task_lib.PREDICT,
                                     self.options.predict_batch_size, model):
      for start, end in zip(batch["start_logits"], batch["end_logits"]):
        feature = features[len(results)]
        results.append(predictions_lib.RawResult(feature.unique_id, start.tolist(),
                                                 end.tolist()))
        if len(results) % 1000 == 0:
          logging.info("Processing example: %d", len(results))
    if len(results) != len(features):
      raise RuntimeError(f"{len(results)} predictions for {len(features)} features")
    seconds = time.perf_counter() - start_time
    logging.info("Predicted %d split examples in %.1f s: examples_per_second = %.2f",
                 len(results), seconds, len(results) / seconds)
    return results

  def _answers(self, examples, features, results, null_score_diff_threshold):
    o = self.options
    return predictions_lib.compute_predictions(
        examples, features, results, o.n_best_size, o.max_answer_length, o.do_lower_case,
        o.version_2_with_negative, null_score_diff_threshold, o.verbose_logging)

  def _tuned_threshold(self, dataset, examples, features, results):
    """The null_score_diff_threshold whose predictions get the best official F1 on `dataset`.

    The official search runs over the best non-null answers (threshold +inf)
    and their null odds, so that the predictions made with the threshold it
    finds score the F1 it reports. (Over thresholded predictions, as in
    Google's README recipe, a question already predicted "" cannot gain.)
    Where answering no question is best, the search reports 0.0; that is
    -inf here.
    """
    answered = self._answers(examples, features, results, math.inf)
    metrics = evaluation.evaluate(dataset, answered.predictions, answered.null_odds,
                                  na_prob_thresh=math.inf, version=evaluation.V2)
    threshold = metrics["best_f1_thresh"]
    if metrics["best_f1"] == 100.0 * metrics.get("NoAns_total", 0) / metrics["total"]:
      threshold = -math.inf
    logging.info("null_score_diff_threshold %s gives the best F1 on %s (%s)", threshold,
                 self.options.predict_file, metrics["best_f1"])
    return threshold

  def _evaluate(self, dataset, outputs, **extra):
    """The official metrics of the predictions as written (v2: plus best_* over null odds)."""
    version = evaluation.V2 if self.options.version_2_with_negative else evaluation.V1
    # The official script's default threshold (1.0) would also count every question whose
    # null odds exceed 1 as "no answer"; the predictions already applied the flag's threshold.
    results = evaluation.evaluate(dataset, outputs.predictions, outputs.null_odds,
                                  na_prob_thresh=math.inf if outputs.null_odds else 1.0,
                                  version=version)
    results.update(extra)
    logging.info("Evaluation of %s: %s", self.options.predict_file, results)
    return results

  def export(self):
    """Writes the SavedModel of the trained model to export_dir; returns export_dir."""
    from squad import export  # pylint: disable=import-outside-toplevel
    o = self.options
    return export.export_saved_model(
        self.runner.trained_model(self.task), o.export_dir, o.vocab_file, o.do_lower_case,
        o.max_seq_length, o.doc_stride, o.max_query_length, o.max_answer_length,
        o.version_2_with_negative, self.null_score_diff_threshold, o.n_best_size)


def run_squad(options):
  """Runs `options` (a SquadOptions); returns the steps' results."""
  return job_lib.run_job(SquadRun, options)
