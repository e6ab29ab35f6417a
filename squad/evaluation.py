"""The official SQuAD metrics, v1.1 and v2.0, reimplemented from their documented behaviour.

The numbers and key order equal those of the official `evaluate-v1.1.py` and
`evaluate-v2.0.py` to the last printed digit. Input they would die on with a
traceback (a missing file, bad JSON, not SQuAD's layout, predictions that are
not {id: text}) raises `EvaluationError`, a `cli.UserError` naming the file.
Missing predictions:

- v1.1, as the official script: a question without a prediction scores 0 and
  stays in the denominator (logged once, with the count); predictions for ids
  not in the dataset are ignored.
- v2.0 needs a prediction for every question ("" predicts "no answer"). The
  official script prints each missing id and dies with a KeyError; here it is
  an `EvaluationError` naming the predictions and the ids. Scoring them as ""
  instead would silently credit every missing unanswerable question.
"""

import collections
import re
import string

from absl import logging

from cli import UserError
import fileio

V1 = "1.1"
V2 = "2.0"

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)


class EvaluationError(UserError, ValueError):
  """A dataset, predictions or null-probability file that cannot be scored; names the file."""


def normalize_answer(text):
  """Lower case, drop ASCII punctuation and the articles a/an/the, collapse whitespace."""
  text = "".join(c for c in text.lower() if c not in _PUNCTUATION)
  return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match_score(prediction, gold):
  """1 if the two answers normalise to the same text, else 0."""
  return int(normalize_answer(prediction) == normalize_answer(gold))


def f1_score(prediction, gold, version=V2):
  """Bag-of-tokens F1 of the normalised answers.

  When either normalises to nothing the score is 0, except that two empty
  answers score 1 in v2.0 (a correct "no answer"); v1.1 scores them 0.
  """
  predicted = normalize_answer(prediction).split()
  expected = normalize_answer(gold).split()
  if not predicted or not expected:
    return int(version == V2 and predicted == expected)
  common = sum((collections.Counter(predicted) & collections.Counter(expected)).values())
  if not common:
    return 0
  precision = common / len(predicted)
  recall = common / len(expected)
  return 2 * precision * recall / (precision + recall)


def _qas(dataset):
  """Every question object of a SQuAD dataset, in file order."""
  for article in dataset["data"]:
    for paragraph in article["paragraphs"]:
      yield from paragraph["qas"]


def detect_version(dataset):
  """V2 if the dataset's `version` says 2.x or any question has `is_impossible`, else V1."""
  if str(dataset.get("version", "")).lstrip("v").startswith("2"):
    return V2
  return V2 if any("is_impossible" in qa for qa in _qas(dataset)) else V1


def has_gold_answers(dataset):
  """Whether the dataset can be scored: a question has an answer or says it has none (v2.0)."""
  return any(qa.get("answers") or "is_impossible" in qa for qa in _qas(dataset))


def _gold_answers(qa, version):
  """The texts to score against; v2.0 drops those that normalise to nothing ([""] if none left)."""
  texts = [answer["text"] for answer in qa["answers"]]
  if version == V2:
    return [text for text in texts if normalize_answer(text)] or [""]
  if not texts:
    raise EvaluationError(f"question {qa['id']!r} has no gold answer, which SQuAD v1.1 needs; "
                          f"score unanswerable questions as v2.0")
  return texts


def question_scores(dataset, predictions, version=None):
  """Exact match (0/1) and F1 (0-1) of each predicted question, each the max over its gold answers.

  Returns ({id: exact}, {id: f1}) in file order, for the questions that have a
  prediction: the official scripts' raw scores, before any null threshold.
  `version`: V1, V2 or None (detect it).
  """
  version = version or detect_version(dataset)
  exact, f1 = {}, {}
  for qa in _qas(dataset):
    if qa["id"] not in predictions:
      continue
    prediction, gold = predictions[qa["id"]], _gold_answers(qa, version)
    exact[qa["id"]] = max(exact_match_score(prediction, text) for text in gold)
    f1[qa["id"]] = max(f1_score(prediction, text, version) for text in gold)
  return exact, f1


def _add_in_order(values):
  """Left-to-right float addition, as the official scripts' sums ran (Python 3.12's `sum`
  compensates rounding and can differ in the last digit)."""
  total = 0
  for value in values:
    total += value
  return total


def _percentages(exact, f1, ids):
  """{"exact", "f1", "total"} over `ids`, as the v2.0 script reports a set of questions."""
  return {"exact": 100.0 * _add_in_order(exact[i] for i in ids) / len(ids),
          "f1": 100.0 * _add_in_order(f1[i] for i in ids) / len(ids),
          "total": len(ids)}


def _best_threshold(scores, predictions, na_probs, has_answer):
  """The best score over null thresholds and the threshold giving it (the official search).

  Starting with every question predicted "no answer", questions switch to
  their predicted text in increasing null probability; a non-empty text on an
  unanswerable question costs 1 (the raw text is tested, not its normal form).
  """
  score = best = sum(1 for answerable in has_answer.values() if not answerable)
  threshold = 0.0
  for qid in sorted(na_probs, key=na_probs.get):
    if qid not in scores:
      continue
    if has_answer[qid]:
      score += scores[qid]
    elif predictions[qid]:
      score -= 1
    if score > best:
      best, threshold = score, na_probs[qid]
  return 100.0 * best / len(scores), threshold


def _first_ids(ids, count=3):
  return ", ".join(repr(i) for i in ids[:count]) + (", ..." if len(ids) > count else "")


def evaluate_v1(dataset, predictions):
  """{"exact_match", "f1"} in percent over all questions; unpredicted ones score 0."""
  exact, f1 = question_scores(dataset, predictions, V1)
  total = sum(1 for _ in _qas(dataset))
  if len(exact) < total:
    missing = [qa["id"] for qa in _qas(dataset) if qa["id"] not in exact]
    logging.warning("%d of %d questions have no prediction and score 0: %s", len(missing),
                    total, _first_ids(missing))
  return {"exact_match": 100.0 * _add_in_order(exact.values()) / total,
          "f1": 100.0 * _add_in_order(f1.values()) / total}


def evaluate_v2(dataset, predictions, na_probs=None, na_prob_thresh=1.0,
                pred_source="predictions", na_prob_source="null probabilities"):
  """The v2.0 script's metrics: exact, f1, total, then HasAns_* and NoAns_* where there are any.

  A question whose null probability (`na_probs`, {id: number}) is above
  `na_prob_thresh` counts as predicted "no answer". With `na_probs` the
  best_exact/best_f1 over all thresholds follow, with the thresholds. Raises
  EvaluationError, naming `pred_source`/`na_prob_source`, when a question has
  no prediction or a predicted one no null probability.
  """
  has_answer = {qa["id"]: bool(qa["answers"]) for qa in _qas(dataset)}
  missing = [qid for qid in has_answer if qid not in predictions]
  if missing:
    raise EvaluationError(f"{pred_source}: no prediction for {len(missing)} of the "
                          f"{len(has_answer)} questions ({_first_ids(missing)}); SQuAD v2.0 "
                          f"scores every question (predict \"\" for no answer)")
  probabilities = dict.fromkeys(has_answer, 0.0) if na_probs is None else na_probs
  unknown = [qid for qid in has_answer if qid not in probabilities]
  if unknown:
    raise EvaluationError(f"{na_prob_source}: no null probability for {len(unknown)} of the "
                          f"{len(has_answer)} questions ({_first_ids(unknown)})")
  exact, f1 = question_scores(dataset, predictions, V2)
  null = {qid for qid in has_answer if probabilities[qid] > na_prob_thresh}

  def thresholded(scores):
    """A question counted as "no answer" scores 1 if it is unanswerable, else 0."""
    return {qid: float(not has_answer[qid]) if qid in null else score
            for qid, score in scores.items()}
  exact_thresh, f1_thresh = thresholded(exact), thresholded(f1)
  metrics = _percentages(exact_thresh, f1_thresh, list(has_answer))
  for prefix, answerable in (("HasAns", True), ("NoAns", False)):
    ids = [qid for qid, value in has_answer.items() if value == answerable]
    if ids:
      for key, value in _percentages(exact_thresh, f1_thresh, ids).items():
        metrics[f"{prefix}_{key}"] = value
  if na_probs is not None:
    for name, scores in (("exact", exact), ("f1", f1)):
      metrics[f"best_{name}"], metrics[f"best_{name}_thresh"] = _best_threshold(
          scores, predictions, na_probs, has_answer)
  return metrics


def evaluate(dataset, predictions, na_probs=None, na_prob_thresh=1.0, version=None,
             pred_source="predictions", na_prob_source="null probabilities"):
  """The official metrics of `predictions` ({id: text}) on `dataset` (a parsed SQuAD file).

  `version`: V1, V2 or None (detect it). Null probabilities and a threshold
  other than 1.0 exist only in v2.0. See evaluate_v1 and evaluate_v2.
  """
  version = version or detect_version(dataset)
  if version == V2:
    return evaluate_v2(dataset, predictions, na_probs, na_prob_thresh, pred_source,
                       na_prob_source)
  if version != V1:
    raise ValueError(f"unknown SQuAD version {version!r}: use {V1!r} or {V2!r}")
  if na_probs is not None or na_prob_thresh != 1.0:
    raise EvaluationError("null probabilities and thresholds are SQuAD v2.0 options, but this "
                          "is scored as v1.1")
  return evaluate_v1(dataset, predictions)


def _field(node, key, kind, where, path):
  """`node[key]`, which must be a `kind` (list or str); else an error naming path and place."""
  value = node.get(key) if isinstance(node, dict) else None
  if not isinstance(value, kind):
    raise EvaluationError(f"{path}: not a SQuAD dataset: {where} has no "
                          f"{'list' if kind is list else 'string'} {key!r}")
  return value


def read_dataset(path):
  """A SQuAD v1.1/v2.0 dataset file, its layout checked (`check_dataset`)."""
  return check_dataset(fileio.read_json(path, EvaluationError, "dataset file"), path)


def check_dataset(dataset, path):
  """`dataset` (parsed from `path`) if laid out as SQuAD (data/paragraphs/qas/id/answers/text).

  Duplicate question ids and a dataset without questions are errors too.
  """
  ids = set()
  for i, article in enumerate(_field(dataset, "data", list, "the top level", path)):
    for j, paragraph in enumerate(_field(article, "paragraphs", list, f"data[{i}]", path)):
      where = f"data[{i}].paragraphs[{j}]"
      for k, qa in enumerate(_field(paragraph, "qas", list, where, path)):
        qid = _field(qa, "id", str, f"{where}.qas[{k}]", path)
        for n, answer in enumerate(_field(qa, "answers", list, f"question {qid!r}", path)):
          _field(answer, "text", str, f"answer {n} of question {qid!r}", path)
        if qid in ids:
          raise EvaluationError(f"{path}: question id {qid!r} appears twice")
        ids.add(qid)
  if not ids:
    raise EvaluationError(f"{path}: the dataset has no questions")
  return dataset


def read_predictions(path):
  """A predictions file: a JSON object {question id: answer text}."""
  return _read_by_question(path, "predictions file", "predictions", "the prediction for",
                           "a string", lambda text: isinstance(text, str))


def read_na_probs(path):
  """A null-probability (or null-odds) file: a JSON object {question id: number}."""
  return _read_by_question(path, "null-probability file", "null probabilities",
                           "the null probability of", "a number",
                           lambda x: isinstance(x, (int, float)) and not isinstance(x, bool))


def _read_by_question(path, label, what, value_of, kind, valid):
  """The `label` JSON object {question id: value} whose every value is `valid` (`kind`)."""
  values = fileio.read_json(path, EvaluationError, label)
  if not isinstance(values, dict):
    raise EvaluationError(f"{path}: {what} must be a JSON object {{question id: "
                          f"{kind.split()[-1]}}}, not a {type(values).__name__}")
  for qid, value in values.items():
    if not valid(value):
      raise EvaluationError(f"{path}: {value_of} {qid!r} is {value!r:.40}, not {kind}")
  return values
