"""The options of a classification task's data, shared by run_classifier.py, task_distill.py
and augment_data.py (each field is also its flag, `cli.options`).

`DataOptions`: the task, its files and their tokenization (Google's names);
its `task_options` go to the task's processor. `ProcessorFlags`: the
processor's options as flags (the generic task's columns, skip_bad_rows,
xnli's language). A script defines both with `define_flags(Options)` and
builds its options with `from_flags(Options)`.
"""

import dataclasses
from typing import Optional

from absl import flags

from cli import options as cli_options
from cli.options import option, required

# `define_flags` defines them for the calling script (see `cli.options`).
flags.disclaim_key_flags()


@dataclasses.dataclass(frozen=True, kw_only=True)
class DataOptions:
  """The task's name, files and tokenization; `task_options`: the processor's keyword args."""
  task_name: str = required("The task (cola, mrpc, sst-2, sts-b, ..., generic).")
  data_dir: str = required("Directory with the task's train/dev/test files.")
  vocab_file: str = required("The vocabulary file the model was trained on.")
  do_lower_case: bool = option(True, "Lower-case the input (uncased models).")
  max_seq_length: int = option(128, "Maximum total sequence length after WordPiece.")
  task_options: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ProcessorFlags:
  """The flags that become the processor's options (`task_options`)."""
  text_a_column: Optional[str] = option(None, "generic: column (name or index) of the text.")
  text_b_column: Optional[str] = option(None, "generic: column of the second text, if any.")
  label_column: Optional[str] = option(None, "generic: column of the label.")
  header: bool = option(True, "generic: the files have a header row.")
  delimiter: Optional[str] = option(None, "generic: field separator (default by extension).")
  regression: bool = option(False, "generic: float labels (regression).")
  skip_bad_rows: bool = option(False, "Skip (and log) malformed rows instead of failing.")
  language: Optional[str] = option(None, "xnli: the language (default zh).")

  def task_options(self, task_name):
    """The processor options these flags set for `task_name`."""
    options = {"skip_bad_rows": True} if self.skip_bad_rows else {}
    name = task_name.strip().lower()
    if name == "generic":
      options.update(text_a_column=_column(self.text_a_column),
                     text_b_column=_column(self.text_b_column),
                     label_column=_column(self.label_column), header=self.header,
                     delimiter=self.delimiter, regression=self.regression)
    elif name == "xnli" and self.language:
      options["language"] = self.language
    return options


def _column(value):
  return int(value) if value is not None and value.isdigit() else value


def define_flags(options_class):
  """The flags of `options_class` (a `DataOptions`) and the `ProcessorFlags`."""
  cli_options.define_flags(options_class)
  cli_options.define_flags(ProcessorFlags)


def from_flags(options_class, **overrides):
  """An `options_class` from the parsed flags, its `task_options` from the `ProcessorFlags`."""
  processor_flags = cli_options.from_flags(ProcessorFlags)
  return cli_options.from_flags(
      options_class, task_options=processor_flags.task_options(flags.FLAGS.task_name),
      **overrides)
