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

import contextlib
import dataclasses
from typing import Optional

from absl import logging

from cli import FlagError
from fileio import resolve_input_files
import modeling
from pretraining import dynamic_masking, inputs
from pretraining.task import PretrainingTask
from training import runner as runner_lib
import tokenization
from training import runtime


@dataclasses.dataclass(frozen=True, kw_only=True)
class PretrainingOptions(runtime.RuntimeOptions):
  """run_pretraining.py's own flags (Google's names and defaults) on top of the runtime's."""
  input_file: str
  output_dir: str
  bert_config_file: Optional[str] = None  # default: the one stored with init_checkpoint
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
  max_eval_steps: int = 100
  # Dynamic-masking records only (create_pretraining_data.py --dynamic_masking).
  vocab_file: Optional[str] = None
  masked_lm_prob: float = 0.15
  do_whole_word_mask: bool = False

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


def run(options):
  """Trains and/or evaluates as the options say; returns {'train': scalars, 'eval': results}.

  Raises cli.UserError subclasses for what the user can fix (flags, input
  files, configs, checkpoints, a non-finite loss).
  """
  bert_config = modeling.resolve_config(options.bert_config_file, options.init_checkpoint,
                                        options.output_dir)
  with contextlib.closing(runner_lib.Runner(options, options.output_dir,
                                            options.init_checkpoint)) as runner:
    files = resolve_input_files(options.input_file)
    dynamic = inputs.check_records(files, options.max_seq_length,
                                   options.max_predictions_per_seq, bert_config)
    logging.info("%d input file(s): %s%s", len(files), files[0], ", ..." if len(files) > 1 else "")
    masker = _masker(options, bert_config, files[0]) if dynamic else None
    if not dynamic and (options.do_whole_word_mask or options.masked_lm_prob != 0.15):
      raise FlagError(f"--do_whole_word_mask and --masked_lm_prob apply to records written with "
                      f"--dynamic_masking; {files[0]} holds masked records")
    if runner.is_chief:
      modeling.save_config(bert_config, options.output_dir)
    task = PretrainingTask(bert_config, files, options.max_seq_length,
                           options.max_predictions_per_seq, kernels=options.kernels,
                           seed=options.seed, masker=masker)
    results = {}
    if options.do_train:
      results["train"] = runner.train(task, options.train_batch_size, options.num_train_steps,
                                      options.learning_rate, options.num_warmup_steps)
    if options.do_eval:
      results["eval"] = runner.evaluate(task, options.eval_batch_size, options.max_eval_steps)
    return results
