"""Metrics against hand-computed values; the eval/test output files."""

import math

import numpy as np
import pytest

from classification import compute_metrics, write_test_results
from training.evaluation import write_eval_results
from classification.metrics import (accuracy, f1_binary, matthews_corrcoef, pearson,
                                    rank_average_ties, spearman)

# preds/labels: tp = 2 (rows 0, 4), fp = 1 (row 1), fn = 1 (row 2), tn = 1 (row 3).
PREDS = [1, 1, 0, 0, 1]
LABELS = [1, 0, 1, 0, 1]


def test_accuracy_and_f1_by_hand():
  assert accuracy(PREDS, LABELS) == pytest.approx(3 / 5)
  assert f1_binary(PREDS, LABELS) == pytest.approx(2 * 2 / (2 * 2 + 1 + 1))  # 2/3
  assert f1_binary([0, 0, 0], [0, 0, 0]) == 0.0  # no positives anywhere
  assert f1_binary([1, 1], [0, 0]) == 0.0


def test_mcc_by_hand():
  # (tp*tn - fp*fn) / sqrt((tp+fp)(tp+fn)(tn+fp)(tn+fn)) = (2 - 1) / sqrt(3*3*2*2) = 1/6
  assert matthews_corrcoef(PREDS, LABELS) == pytest.approx(1 / 6)
  assert matthews_corrcoef([1, 0, 1], [1, 0, 1]) == pytest.approx(1.0)
  assert matthews_corrcoef([0, 1, 0], [1, 0, 1]) == pytest.approx(-1.0)
  # Degenerate: all predictions the same class, or all labels the same -> 0.
  assert matthews_corrcoef([1, 1, 1, 1], [1, 0, 1, 0]) == 0.0
  assert matthews_corrcoef([1, 0, 1, 0], [1, 1, 1, 1]) == 0.0
  # Three classes: c=3, s=5, t=(2,2,1), p=(1,2,2): (15 - 8) / sqrt((25 - 9) * (25 - 9)) = 7/16
  assert matthews_corrcoef([0, 1, 1, 2, 2], [0, 0, 1, 1, 2]) == pytest.approx(
      (3 * 5 - (2 * 1 + 2 * 2 + 1 * 2)) / math.sqrt((25 - 9) * (25 - 9)))


def test_pearson_by_hand():
  # x - mean = (-1, 0, 1); y - mean = (-5/3, -2/3, 7/3): r = 4 / sqrt(2 * 78/9) = 12/sqrt(156)
  assert pearson([1, 2, 3], [1, 2, 5]) == pytest.approx(12 / math.sqrt(156))
  assert pearson([1, 2, 3], [6, 4, 2]) == pytest.approx(-1.0)
  assert math.isnan(pearson([2, 2, 2], [1, 2, 3]))  # constant side: undefined


def test_ranks_and_spearman_with_ties():
  assert rank_average_ties([10, 20, 10, 30, 20, 20]).tolist() == [1.5, 4, 1.5, 6, 4, 4]
  assert rank_average_ties([3.0, 1.0, 2.0]).tolist() == [3, 1, 2]
  # ranks (1, 2.5, 2.5, 4) and (1, 3, 2, 4): r = 4.5 / sqrt(4.5 * 5)
  assert spearman([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(4.5 / math.sqrt(4.5 * 5))
  # Monotone but non-linear: Spearman 1, Pearson below 1.
  assert spearman([1, 2, 3, 4], [1, 4, 9, 100]) == pytest.approx(1.0)
  assert pearson([1, 2, 3, 4], [1, 4, 9, 100]) < 0.9


def test_compute_metrics_keys_per_task():
  assert compute_metrics("SST-2", PREDS, LABELS) == {"eval_accuracy": pytest.approx(0.6)}
  assert compute_metrics("mrpc", PREDS, LABELS) == {"eval_accuracy": pytest.approx(0.6),
                                                    "eval_f1": pytest.approx(2 / 3)}
  assert set(compute_metrics("qqp", PREDS, LABELS)) == {"eval_accuracy", "eval_f1"}
  assert compute_metrics("cola", PREDS, LABELS) == {"eval_accuracy": pytest.approx(0.6),
                                                    "eval_mcc": pytest.approx(1 / 6)}
  assert compute_metrics("sts-b", [1, 2, 3], [1, 2, 5]) == {
      "eval_pearson": pytest.approx(12 / math.sqrt(156)), "eval_spearman": pytest.approx(1.0)}
  assert compute_metrics("generic", PREDS, LABELS) == {"eval_accuracy": pytest.approx(0.6)}
  assert set(compute_metrics("generic", [0.1, 0.2], [0.3, 0.5], is_regression=True)) == {
      "eval_pearson", "eval_spearman"}
  with pytest.raises(ValueError, match="unknown task_name 'squad'"):
    compute_metrics("squad", PREDS, LABELS)


def test_compute_metrics_takes_scores_and_drops_padding():
  logits = np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7], [5.0, 0.0]])
  labels = [1, 1, 1, 0]
  # argmax = (1, 0, 1, 0): 3/4 right; dropping the padded last row leaves 2/3.
  assert compute_metrics("mrpc", logits, labels)["eval_accuracy"] == pytest.approx(0.75)
  assert compute_metrics("mrpc", logits, labels, is_real_example=[1, 1, 1, 0]) == {
      "eval_accuracy": pytest.approx(2 / 3), "eval_f1": pytest.approx(2 * 2 / (4 + 0 + 1))}
  scores = np.array([[1.0], [2.0], [3.0], [9.0]])
  assert compute_metrics("stsb", scores, [1, 2, 3, 0], is_real_example=[1, 1, 1, 0])[
      "eval_pearson"] == pytest.approx(1.0)


def test_metric_input_errors():
  with pytest.raises(ValueError, match=r"predictions \(3,\) and labels \(2,\)"):
    accuracy([1, 0, 1], [1, 0])
  with pytest.raises(ValueError, match="no examples"):
    compute_metrics("cola", [], [])


def test_test_results_format(tmp_path):
  path = tmp_path / "test_results.tsv"
  probabilities = np.array([[0.1, 0.2, 0.7], [0.998432, 0.001, 0.000568], [0.5, 0.25, 0.25]],
                           dtype=np.float32)
  write_test_results(path, probabilities, 2)  # the third row is padding
  assert path.read_text() == "0.1\t0.2\t0.7\n0.998432\t0.001\t0.000568\n"
  write_test_results(path, np.array([4.25, 0.1, 3.0]), 3)  # regression: one score per line
  assert path.read_text() == "4.25\n0.1\n3.0\n"
  assert sorted(p.name for p in tmp_path.iterdir()) == ["test_results.tsv"]
  with pytest.raises(ValueError, match="got 2 predictions for 3 test examples"):
    write_test_results(tmp_path / "short.tsv", [[0.5, 0.5]] * 2, 3)
  assert not (tmp_path / "short.tsv").exists()


def test_eval_results_format(tmp_path):
  path = tmp_path / "eval_results.txt"
  write_eval_results(path, {"global_step": 343, "eval_loss": np.float32(0.5),
                            "eval_accuracy": 0.875, "loss": 0.25})
  assert path.read_text() == ("eval_accuracy = 0.875\neval_loss = 0.5\nglobal_step = 343\n"
                              "loss = 0.25\n")
