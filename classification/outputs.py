"""Google's test_results.tsv, written atomically (eval_results.txt: training.evaluation)."""

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

