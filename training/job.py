"""`Job`: one run of a trainer script, the steps its options ask for, on one `Runner`.

A trainer is its task(s) plus what is specific to it (its data, its
outputs); a `Job` subclass says that, and this module holds what every
trainer repeats: the runner in output_dir, Google's step count from epochs
(refusing a run that gives no step), the warm-up, the do_train / do_eval /
do_predict / export_dir dispatch, and the runner released at the end
(`run_job`, TF Model Garden's `run_experiment` made small). `FineTuningJob`
adds what a script that fine-tunes a checkpoint on text checks before any
work: the checkpoint's case, config, sequence length, vocabulary and
export_dir; `FineTuningOptions` are the flags such scripts share.
"""

import contextlib
import dataclasses
from typing import Optional

import cli
from cli import FlagError
from cli.options import option
import modeling
import tokenization
from training import checkpointing
from training import runner as runner_lib
from training import runtime

# (result key, the option that asks for it, the method that runs it), in run order.
STEPS = (("train", "do_train", "train"), ("eval", "do_eval", "evaluate"),
         ("predict", "do_predict", "predict"), ("export", "export_dir", "export"))


def num_train_steps(num_examples, batch_size, epochs):
  """Google's int(num_examples / batch_size * epochs); FlagError when that is no step."""
  steps = int(num_examples / batch_size * epochs)
  if steps < 1:
    raise FlagError(f"{num_examples} examples, train_batch_size {batch_size} and {epochs} "
                    "epochs give no training step")
  return steps


class Job:
  """Subclasses implement the steps their options can ask for (`STEPS`' methods).

  `options` has output_dir, train_batch_size, learning_rate and either
  num_warmup_steps or warmup_proportion (Google's two spellings of warm-up).
  """

  def __init__(self, options, init_checkpoint=None):
    self.options = options
    self.runner = runner_lib.Runner(options, options.output_dir, init_checkpoint)

  def check_inputs(self):
    """Reads and checks what the steps will read, before the first step runs."""

  def steps(self):
    """[(result key, method name)] of the steps the options ask for."""
    return [(key, method) for key, flag, method in STEPS if getattr(self.options, flag, None)]

  def run(self):
    """Runs the requested steps; returns their results keyed train/eval/predict/export.

    The export has nothing to save (the checkpoint is kept): on a signal it ends at once
    (`cli.exit_on_signal`), as an export script does.
    """
    self.check_inputs()
    results = {}
    for key, method in self.steps():
      with cli.exit_on_signal() if key == "export" else contextlib.nullcontext():
        results[key] = getattr(self, method)()
    return results

  def train_steps(self, num_examples, epochs):
    """num_train_steps for `epochs` over `num_examples` at train_batch_size."""
    return num_train_steps(num_examples, self.options.train_batch_size, epochs)

  def train_task(self, task, steps, **kwargs):
    """Trains `task` for `steps` with the options' batch size, learning rate and warm-up;
    `kwargs` go to `Runner.train` (output_dir, init_checkpoint of a stage)."""
    o = self.options
    warmup = getattr(o, "num_warmup_steps", None)
    if warmup is None:
      warmup = int(steps * o.warmup_proportion)
    return self.runner.train(task, o.train_batch_size, steps, o.learning_rate, warmup, **kwargs)


@dataclasses.dataclass(frozen=True, kw_only=True)
class FineTuningOptions(runtime.RuntimeOptions):
  """The flags every fine-tuning script shares (Google's names and defaults)."""
  bert_config_file: Optional[str] = option(
      None, "bert_config.json (or HF config.json). Default: the one stored with "
      "init_checkpoint (e.g. an HF directory's config.json).")
  init_checkpoint: Optional[str] = option(
      None, "Initial weights: Google TF1, HF directory or ours.")
  do_train: bool = option(False, "Whether to run training.")
  train_batch_size: int = option(32, "Total batch size for training.")
  learning_rate: float = option(5e-5, "The initial learning rate for Adam.")
  num_train_epochs: float = option(3.0, "Total number of training epochs to perform.")
  warmup_proportion: float = option(
      0.1, "Proportion of training to perform linear learning rate warmup for.")

  def __post_init__(self):
    super().__post_init__()
    for name in ("train_batch_size", "num_train_epochs"):
      runtime.check_positive(name, getattr(self, name))
    if self.do_train:
      runtime.check_positive("learning_rate", self.learning_rate)
    if not 0.0 <= self.warmup_proportion <= 1.0:
      raise FlagError(f"--warmup_proportion must be in [0, 1], got {self.warmup_proportion}")


class FineTuningJob(Job):
  """A job that fine-tunes a BERT checkpoint on text (run_classifier, run_squad, task_distill),
  under `FineTuningOptions` (with vocab_file, do_lower_case, max_seq_length, output_dir,
  export_dir and overwrite_export).

  Before the runner takes output_dir: do_lower_case against the checkpoint's
  name, the model's config (`model_config`) against max_seq_length, the
  vocabulary against the config, init_checkpoint (there, when output_dir holds
  no checkpoint to resume from), export_dir (`export_module`'s
  `check_export_dir`).
  """

  def __init__(self, options):
    self.options = o = options
    tokenization.validate_case_matches_checkpoint(o.do_lower_case, o.init_checkpoint)
    self.config, self.config_source = self.model_config()
    self.config.check_seq_length(o.max_seq_length)
    self.tokenizer = tokenization.FullTokenizer(o.vocab_file, do_lower_case=o.do_lower_case)
    self.tokenizer.check_vocab_size(self.config.vocab_size, self.config_source)
    if o.init_checkpoint and not checkpointing.latest_checkpoint(o.output_dir):
      modeling.detect_format(o.init_checkpoint)  # the weights a step will read exist
    if o.export_dir:
      self.export_module().check_export_dir(o.export_dir, o.output_dir, o.overwrite_export)
    super().__init__(options, o.init_checkpoint)

  def model_config(self):
    """(the model's BertConfig, what it was read from): bert_config_file, else init_checkpoint's,
    else output_dir's (a finished run evaluated again)."""
    o = self.options
    config = modeling.resolve_config(o.bert_config_file, o.init_checkpoint, o.output_dir)
    return config, o.bert_config_file or o.init_checkpoint or config.source

  def export_module(self):
    """The module with the job's `check_export_dir` and `export_saved_model`."""
    raise NotImplementedError


def run_job(job_class, options):
  """Runs `job_class(options)`'s requested steps; returns their results."""
  job = job_class(options)
  with contextlib.closing(job.runner):
    return job.run()
