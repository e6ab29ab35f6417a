"""Evaluation metrics of the GLUE tasks, in numpy.

`compute_metrics(task, preds, labels)` returns Google-style keys:
- every classification task: `eval_accuracy` (Google's only metric);
- MRPC, QQP: also `eval_f1` (binary F1, positive class = label id 1);
- CoLA: also `eval_mcc` (Matthews correlation);
- STS-B (and any task with `is_regression=True`, e.g. a generic regression):
  `eval_pearson`, `eval_spearman` (no accuracy).
Undefined values follow the usual conventions: MCC and F1 are 0 when their
denominator is 0 (e.g. all predictions identical); Pearson/Spearman are NaN
when either side is constant.
"""

import numpy as np

from classification.registry import canonical_task_name

_F1_TASKS = ("mrpc", "qqp")
_MCC_TASKS = ("cola",)
_REGRESSION_TASKS = ("sts-b", "stsb")  # registry names


def accuracy(preds, labels):
  preds, labels = _pair(preds, labels)
  return float(np.mean(preds == labels))


def f1_binary(preds, labels):
  """F1 of class 1: 2tp / (2tp + fp + fn); 0 when there are no positives at all."""
  preds, labels = _pair(preds, labels)
  tp = np.sum((preds == 1) & (labels == 1))
  fp = np.sum((preds == 1) & (labels != 1))
  fn = np.sum((preds != 1) & (labels == 1))
  denominator = 2 * tp + fp + fn
  return float(2 * tp / denominator) if denominator else 0.0


def matthews_corrcoef(preds, labels):
  """Matthews correlation (multi-class form; the usual formula for two classes)."""
  preds, labels = _pair(preds, labels)
  classes, indices = np.unique(np.concatenate([labels, preds]), return_inverse=True)
  n = len(labels)
  confusion = np.zeros((len(classes), len(classes)), dtype=np.float64)
  np.add.at(confusion, (indices[:n], indices[n:]), 1)
  t = confusion.sum(axis=1)  # true count per class
  p = confusion.sum(axis=0)  # predicted count per class
  c, s = np.trace(confusion), float(n)
  denominator = np.sqrt((s * s - p @ p) * (s * s - t @ t))
  return float((c * s - t @ p) / denominator) if denominator else 0.0


def pearson(preds, labels):
  preds, labels = _pair(preds, labels, float)
  x, y = preds - preds.mean(), labels - labels.mean()
  denominator = np.sqrt((x @ x) * (y @ y))
  return float(x @ y / denominator) if denominator else float("nan")


def rank_average_ties(values):
  """1-based ranks; tied values share the average of the ranks they span."""
  values = np.asarray(values, dtype=np.float64)
  order = np.argsort(values, kind="stable")
  sorted_values = values[order]
  # Start index of each run of equal values, and each value's run.
  starts = np.flatnonzero(np.r_[True, sorted_values[1:] != sorted_values[:-1]])
  ends = np.r_[starts[1:], len(values)]
  run_rank = (starts + ends + 1) / 2.0  # mean of ranks starts+1 .. ends
  run_of = np.repeat(np.arange(len(starts)), ends - starts)
  ranks = np.empty(len(values))
  ranks[order] = run_rank[run_of]
  return ranks


def spearman(preds, labels):
  preds, labels = _pair(preds, labels, float)
  return pearson(rank_average_ties(preds), rank_average_ties(labels))


def compute_metrics(task, preds, labels, is_real_example=None, is_regression=False):
  """Metrics for `task` (any name `get_processor` accepts).

  Classification tasks without a metric of their own ("generic", MNLI, ...) get
  accuracy only; `is_regression=True` (a generic regression) gives correlations.
  `preds`: class ids [n], class scores [n, num_classes] (argmax is taken), or
  regression scores [n] / [n, 1]. `labels`: label ids or scores [n].
  `is_real_example` [n] drops padding examples (0) before scoring.
  """
  task = canonical_task_name(task)
  preds, labels = np.asarray(preds), np.asarray(labels)
  if is_real_example is not None:
    real = np.asarray(is_real_example).astype(bool)
    preds, labels = preds[real], labels[real]
  if is_regression or task in _REGRESSION_TASKS:
    preds = preds.reshape(len(preds)) if preds.ndim == 2 and preds.shape[1] == 1 else preds
    return {"eval_pearson": pearson(preds, labels), "eval_spearman": spearman(preds, labels)}
  if preds.ndim == 2:
    preds = np.argmax(preds, axis=-1)
  result = {"eval_accuracy": accuracy(preds, labels)}
  if task in _F1_TASKS:
    result["eval_f1"] = f1_binary(preds, labels)
  if task in _MCC_TASKS:
    result["eval_mcc"] = matthews_corrcoef(preds, labels)
  return result


def _pair(preds, labels, dtype=None):
  preds, labels = np.asarray(preds, dtype=dtype), np.asarray(labels, dtype=dtype)
  if preds.ndim != 1 or preds.shape != labels.shape:
    raise ValueError(f"predictions {preds.shape} and labels {labels.shape} must be two 1-D "
                     "arrays of the same length")
  if not len(preds):
    raise ValueError("no examples to score")
  return preds, labels
