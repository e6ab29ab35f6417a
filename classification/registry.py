"""get_processor(task_name): Google's task names (and the other GLUE tasks) to processors."""

import functools

from classification import glue
from classification.generic import DelimitedFileProcessor
from cli import FlagError

# Lower-cased task name -> processor factory. Aliases accept GLUE's directory names.
_PROCESSORS = {
    "cola": glue.ColaProcessor,
    "mnli": glue.MnliProcessor,
    "mnli-mm": functools.partial(glue.MnliProcessor, mismatched=True),
    "mrpc": glue.MrpcProcessor,
    "xnli": glue.XnliProcessor,
    "sst-2": glue.Sst2Processor,
    "sst2": glue.Sst2Processor,
    "sts-b": glue.StsbProcessor,
    "stsb": glue.StsbProcessor,
    "qqp": glue.QqpProcessor,
    "qnli": glue.QnliProcessor,
    "rte": glue.RteProcessor,
    "wnli": glue.WnliProcessor,
    "generic": DelimitedFileProcessor,
}
_ALIASES = {"mnli_mismatched": "mnli-mm", "mnli-mismatched": "mnli-mm"}

TASK_NAMES = tuple(sorted(_PROCESSORS))


def canonical_task_name(task_name):
  """The registry's name for `task_name` (case-insensitive, aliases resolved), or ValueError."""
  key = task_name.strip().lower()
  key = _ALIASES.get(key, key)
  if key not in _PROCESSORS:
    raise FlagError(f"unknown task_name {task_name!r}; known tasks: {', '.join(TASK_NAMES)}")
  return key


def get_processor(task_name, **options):
  """A new processor for `task_name` (case-insensitive).

  `options` go to the processor: `skip_bad_rows` for every task, `language` for
  xnli, the column options of `DelimitedFileProcessor` for "generic", and
  `aug_train` (train on augment_data.py's `train_aug.tsv`) for all but xnli.
  """
  key = canonical_task_name(task_name)
  try:
    return _PROCESSORS[key](**options)
  except TypeError as e:
    raise FlagError(f"bad options {sorted(options)} for task {task_name!r}: {e}") from None
