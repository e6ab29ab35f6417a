"""`run(PretrainingOptions)`: Google's run_pretraining (train and/or evaluate) on the runner.

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
from typing import Optional

from absl import logging

from cli import FlagError
from cli.options import option, required
from fileio import resolve_input_files
import modeling
from pretraining import dynamic_masking, inputs
from pretraining.task import PretrainingTask
import tokenization
from training import job as job_lib
from training import runtime


@dataclasses.dataclass(frozen=True, kw_only=True)
class PretrainingOptions(runtime.RuntimeOptions):
  """run_pretraining.py's flags (Google's names and defaults) on top of the runtime's."""
  input_file: str = required(
      "Input TF example files (can be a glob or comma separated).")
  output_dir: str = required(
      "The output directory where the model checkpoints will be written.")
  bert_config_file: Optional[str] = option(
      None, "bert_config.json (or HF config.json). Default: the one stored with "
      "init_checkpoint (e.g. an HF directory's config.json).")
  init_checkpoint: Optional[str] = option(
      None, "Initial checkpoint (Google TF1, HuggingFace or ours); only used when output_dir "
      "has no checkpoint yet.")
  max_seq_length: int = option(128, "The maximum total input sequence length after WordPiece "
                               "tokenization; must match the data.")
  max_predictions_per_seq: int = option(
      20, "Maximum number of masked LM predictions per sequence; must match the data.")
  do_train: bool = option(False, "Whether to run training.")
  do_eval: bool = option(False, "Whether to run eval on the dev set.")
  train_batch_size: int = option(32, "Total batch size for training.")
  eval_batch_size: int = option(8, "Total batch size for eval.")
  learning_rate: float = option(5e-5, "The initial learning rate for Adam.")
  num_train_steps: int = option(100000, "Number of training steps.")
  num_warmup_steps: int = option(10000, "Number of warmup steps.")
  max_eval_steps: int = option(100, "Maximum number of eval steps.")
  # Dynamic-masking records only (create_pretraining_data.py --dynamic_masking).
  vocab_file: Optional[str] = option(
      None, "Records written with --dynamic_masking: the vocabulary they were made with.")
  masked_lm_prob: float = option(
      0.15, "Records written with --dynamic_masking: the share of tokens to mask.")
  do_whole_word_mask: bool = option(
      False, "Records written with --dynamic_masking: mask whole words.")

  def __post_init__(self):
    super().__post_init__()
    if not (self.do_train or self.do_eval):
      raise FlagError("At least one of `do_train` or `do_eval` must be True.")
    for name in ("max_seq_length", "max_predictions_per_seq", "train_batch_size",
                 "eval_batch_size", "learning_rate", "num_train_steps", "max_eval_steps"):
      runtime.check_positive(name, getattr(self, name))
    if self.num_warmup_steps < 0:
      raise FlagError(f"--num_warmup_steps must be >= 0, got {self.num_warmup_steps}")
    if not 0.0 < self.masked_lm_prob <= 1.0:
      raise FlagError(f"--masked_lm_prob must be in (0, 1], got {self.masked_lm_prob}")
    if self.max_predictions_per_seq > self.max_seq_length:
      raise FlagError(f"--max_predictions_per_seq {self.max_predictions_per_seq} exceeds "
                      f"--max_seq_length {self.max_seq_length}")


def _masker(options, bert_config, first_file):
  """The in-pipeline masker for records without masks (--dynamic_masking records)."""
  if not options.vocab_file:
    raise FlagError(f"{first_file} holds records written with --dynamic_masking: pass "
                    "--vocab_file (the masks need its [MASK], [CLS] and [SEP] and its size)")
  tokenization.FullTokenizer(options.vocab_file).check_vocab_size(
      bert_config.vocab_size, options.bert_config_file or options.init_checkpoint)
  logging.info("Dynamic masking: %s of the tokens%s, new masks at every epoch",
               options.masked_lm_prob, ", whole words" if options.do_whole_word_mask else "")
  return dynamic_masking.DynamicMasker(options.vocab_file, options.max_predictions_per_seq,
                                       options.masked_lm_prob, options.do_whole_word_mask)


class PretrainingJob(job_lib.Job):
  """run_pretraining.py: train and/or evaluate the pre-training task on the input files."""

  def __init__(self, options):
    self.options = options
    self.bert_config = modeling.resolve_config(options.bert_config_file,
                                               options.init_checkpoint, options.output_dir)
    super().__init__(options, options.init_checkpoint)
    self.task = None

  def check_inputs(self):
    """Checks the records against the flags and the config; builds the task."""
    o = self.options
    files = resolve_input_files(o.input_file)
    dynamic = inputs.check_records(files, o.max_seq_length, o.max_predictions_per_seq,
                                   self.bert_config)
    logging.info("%d input file(s): %s%s", len(files), files[0], ", ..." if len(files) > 1 else "")
    masker = _masker(o, self.bert_config, files[0]) if dynamic else None
    if not dynamic and (o.do_whole_word_mask or o.masked_lm_prob != 0.15):
      raise FlagError(f"--do_whole_word_mask and --masked_lm_prob apply to records written with "
                      f"--dynamic_masking; {files[0]} holds masked records")
    if self.runner.is_chief:
      modeling.save_config(self.bert_config, o.output_dir)
    self.task = PretrainingTask(self.bert_config, files, o.max_seq_length,
                                o.max_predictions_per_seq, seed=o.seed,
                                masker=masker)

  def train(self):
    return self.train_task(self.task, self.options.num_train_steps)

  def evaluate(self):
    return self.runner.evaluate(self.task, self.options.eval_batch_size,
                                self.options.max_eval_steps)


def run(options):
  """Trains and/or evaluates as the options say; returns {'train': scalars, 'eval': results}.

  Raises cli.UserError subclasses for what the user can fix (flags, input
  files, configs, checkpoints, a non-finite loss).
  """
  return job_lib.run_job(PretrainingJob, options)
