"""The files run_classifier writes: test_results.tsv and eval_results.txt (atomically)."""

import numpy as np

from fileio import atomic_write_text


def write_test_results(path, predictions, num_actual_examples):
  """Google's test_results.tsv: one line per real test example.

  `predictions` are, in example order, class probability vectors (written
  tab-separated) or regression scores (one number per line). Outputs past
  `num_actual_examples` belong to PaddingInputExamples and are dropped; fewer
  than that is an error. Numbers are float32 printed as Google's `str()` did.
  """
  lines = []
  for prediction in predictions:
    if len(lines) == num_actual_examples:
      break
    values = np.atleast_1d(np.asarray(prediction, dtype=np.float32))
    lines.append("\t".join(str(v) for v in values) + "\n")
  if len(lines) != num_actual_examples:
    raise ValueError(f"got {len(lines)} predictions for {num_actual_examples} test examples")
  atomic_write_text(path, "".join(lines))


def write_eval_results(path, result):
  """Google's eval_results.txt: `key = value` lines sorted by key."""
  atomic_write_text(path, "".join(f"{k} = {result[k]}\n" for k in sorted(result)))
