"""squad.evaluation and evaluate_squad.py against the official SQuAD scripts' outputs
(shared/fixtures/squad/metrics, see its README), plus the cases those scripts crash on."""

import json
import os
import subprocess
import sys

import pytest

import cli
from squad import evaluation
from tests.paths import REPO

FIXTURES = "fixtures/squad"
PREDICT200 = ("fixtures/squad/inputs/v1_predict200.json",
              "fixtures/squad/predictions/v1_predict200/predictions.json")
PREDICT150 = ("fixtures/squad/metrics/v2_predict150.eval_dataset.json",
              "fixtures/squad/predictions/v2_predict150/predictions_thr{}.json",
              "fixtures/squad/predictions/v2_predict150/null_odds.json")
V1_HARD = ("data/squad/dev-v1.1-a.json", "fixtures/squad/metrics/v1_hard.predictions.json")
V2_HARD = ("data/squad/dev-v2.0-a.json", "fixtures/squad/metrics/v2_hard.predictions.json",
           "fixtures/squad/metrics/v2_hard.na_prob.json")

# The README's metrics/ pairs: (dataset, predictions, na-prob file, na_prob_thresh, official).
OFFICIAL = [
    (*PREDICT200, None, 1.0, "v1_predict200.eval.json"),
    (PREDICT150[0], PREDICT150[1].format("0.0"), PREDICT150[2], 1.0,
     "v2_predict150.eval_thr0.0.json"),
    (PREDICT150[0], PREDICT150[1].format("-1.0"), PREDICT150[2], 1.0,
     "v2_predict150.eval_thr-1.0.json"),
    (*V1_HARD, None, 1.0, "v1_hard.eval.json"),
    (*V2_HARD[:2], None, 1.0, "v2_hard.eval.no_na_prob.json"),
    (*V2_HARD, 1.0, "v2_hard.eval.na_prob.json"),
    (*V2_HARD, 0.5, "v2_hard.eval.na_prob_thresh0.5.json"),
]


def _load(path):
  with open(path, encoding="utf-8") as f:
    return json.load(f)


def _jsonl(path):
  with open(path, encoding="utf-8") as f:
    return [json.loads(line) for line in f]


def _official(shared_dir, name):
  return _load(shared_dir / FIXTURES / "metrics" / name)


@pytest.mark.parametrize("data, preds, na_probs, thresh, official", OFFICIAL,
                         ids=[case[-1] for case in OFFICIAL])
def test_metrics_equal_the_official_scripts(shared_dir, data, preds, na_probs, thresh, official):
  metrics = evaluation.evaluate(
      evaluation.read_dataset(shared_dir / data), evaluation.read_predictions(shared_dir / preds),
      evaluation.read_na_probs(shared_dir / na_probs) if na_probs else None, thresh)
  expected = _official(shared_dir, official)
  assert list(metrics) == list(expected)
  assert metrics == expected  # floats compared exactly


def test_v1_per_question_scores(shared_dir):
  exact, f1 = evaluation.question_scores(evaluation.read_dataset(shared_dir / V1_HARD[0]),
                                         evaluation.read_predictions(shared_dir / V1_HARD[1]))
  rows = [row for row in _jsonl(shared_dir / FIXTURES / "metrics/v1_hard.per_question.jsonl")
          if row["predicted"]]
  assert list(exact) == [row["qas_id"] for row in rows]  # predicted questions, file order
  assert exact == {row["qas_id"]: row["exact_match"] for row in rows}
  assert f1 == {row["qas_id"]: row["f1"] for row in rows}


def test_v2_per_question_scores(shared_dir):
  exact, f1 = evaluation.question_scores(evaluation.read_dataset(shared_dir / V2_HARD[0]),
                                         evaluation.read_predictions(shared_dir / V2_HARD[1]))
  rows = _jsonl(shared_dir / FIXTURES / "metrics/v2_hard.per_question.jsonl")
  assert exact == {row["qas_id"]: row["exact"] for row in rows}
  assert f1 == {row["qas_id"]: row["f1"] for row in rows}


def test_normalisation_and_scores_by_hand():
  assert evaluation.normalize_answer(" The  Quick,\tbrown-fox! ") == "quick brownfox"
  assert evaluation.normalize_answer("Theatre of an era") == "theatre of era"
  # Unicode quotes and dashes are not in string.punctuation; "A" between them is a word.
  assert evaluation.normalize_answer("\u201cA\u201d \u2013 B") == "\u201c \u201d \u2013 b"
  assert evaluation.exact_match_score("the Eiffel tower.", "Eiffel Tower") == 1
  # pred 3 tokens, gold 2, 1 shared: precision 1/3, recall 1/2, F1 = 2 * 1/6 / (5/6) = 0.4.
  assert evaluation.f1_score("in Paris France", "Paris city") == pytest.approx(0.4)
  assert evaluation.f1_score("London", "Paris") == 0
  # Both normalise to nothing: a correct "no answer" in v2.0, no overlap in v1.1.
  assert evaluation.f1_score("the", "", evaluation.V2) == 1
  assert evaluation.f1_score("the", "a", evaluation.V1) == 0


def _dataset(*qas, version=None):
  dataset = {"data": [{"title": "t", "paragraphs": [{"context": "c", "qas": list(qas)}]}]}
  if version:
    dataset["version"] = version
  return dataset


def _qa(qid, *answers, **fields):
  return dict(id=qid, question="q", answers=[{"text": a, "answer_start": 0} for a in answers],
              **fields)


def test_v2_threshold_and_best_threshold_by_hand():
  dataset = _dataset(_qa("q1", "Paris"), _qa("q2", is_impossible=True),
                     _qa("q3", is_impossible=True))
  preds = {"q1": "paris", "q2": " ", "q3": "London"}  # right, right (" " is empty), wrong
  na_probs = {"q1": 0.2, "q2": 0.1, "q3": 0.9}
  metrics = evaluation.evaluate(dataset, preds, na_probs)
  assert metrics["exact"] == pytest.approx(200 / 3) and metrics["NoAns_exact"] == 50.0
  # The search tests the raw text: q2's " " counts as an answer there, so switching q2 to
  # its text (from the start, all "no answer": 2 right) loses one and q1 only wins it back.
  assert (metrics["best_exact"], metrics["best_exact_thresh"]) == (pytest.approx(200 / 3), 0.0)
  # Above 0.5 q3 counts as "no answer", which is right.
  assert evaluation.evaluate(dataset, preds, na_probs, 0.5)["exact"] == 100.0
  # Without null probabilities every one is 0.0: a negative threshold overrides all.
  assert evaluation.evaluate(dataset, preds, na_prob_thresh=-0.5)["exact"] == pytest.approx(
      200 / 3)


def test_v1_missing_questions_score_zero_and_extra_ids_are_ignored(caplog):
  dataset = _dataset(_qa("a", "Paris", "the city"), _qa("b", "1984"))
  metrics = evaluation.evaluate(dataset, {"a": "City", "zzz": "1984"})
  assert metrics == {"exact_match": 50.0, "f1": 50.0}
  assert "1 of 2 questions have no prediction and score 0: 'b'" in caplog.text


def test_v2_missing_predictions_are_an_error_naming_the_file(shared_dir, tmp_path):
  data, preds, _ = V2_HARD
  predictions = _load(shared_dir / preds)
  removed = _load(shared_dir / FIXTURES / "metrics/summary.json")["v2_hard"]["missing20_try"]
  for qid in removed["ids_removed"]:
    del predictions[qid]
  with pytest.raises(evaluation.EvaluationError,
                     match=r"^partial\.json: no prediction for 20 of the 3782 questions "
                           r"\('60329ef744dddd0160c0acdab', '5db01483de8b16a3fa1ee511d', "
                           r"'2b86fbfcdef7a6b300440dc01', \.\.\.\); SQuAD v2\.0 scores"):
    evaluation.evaluate(evaluation.read_dataset(shared_dir / data), predictions,
                        pred_source="partial.json")


def test_version_detection_and_override(shared_dir):
  v1 = evaluation.read_dataset(shared_dir / PREDICT200[0])
  v2 = evaluation.read_dataset(shared_dir / PREDICT150[0])
  assert (evaluation.detect_version(v1), evaluation.detect_version(v2)) == ("1.1", "2.0")
  assert evaluation.detect_version(_dataset(_qa("x", "y"), version="v2.0")) == "2.0"
  assert evaluation.detect_version(_dataset(_qa("x", is_impossible=False))) == "2.0"
  predictions = evaluation.read_predictions(shared_dir / PREDICT200[1])
  as_v2 = evaluation.evaluate(v1, predictions, version=evaluation.V2)
  assert list(as_v2) == ["exact", "f1", "total", "HasAns_exact", "HasAns_f1", "HasAns_total"]
  assert as_v2["exact"] == _official(shared_dir, "v1_predict200.eval.json")["exact_match"]
  with pytest.raises(evaluation.EvaluationError, match="has no gold answer.*v1.1"):
    evaluation.evaluate(v2, _load(shared_dir / PREDICT150[1].format("0.0")),
                        version=evaluation.V1)
  with pytest.raises(evaluation.EvaluationError, match="SQuAD v2.0 options"):
    evaluation.evaluate(v1, predictions, na_prob_thresh=0.5)


def _write(path, text):
  path.write_text(text, encoding="utf-8")
  return str(path)


@pytest.mark.parametrize("reader, text, message", [
    ("read_dataset", '{"data": [', r"d\.json: not valid JSON \(Expecting value"),
    ("read_dataset", '[{"title": "x"}]', r"d\.json: not a SQuAD dataset: the top level has no "
                                         r"list 'data'"),
    ("read_dataset", '{"data": [{"paragraphs": [{"qas": [{"answers": []}]}]}]}',
     r"d\.json: not a SQuAD dataset: data\[0\]\.paragraphs\[0\]\.qas\[0\] has no string 'id'"),
    ("read_dataset", '{"data": [{"paragraphs": [{"qas": [{"id": "q", "answers": [{}]}]}]}]}',
     r"d\.json: not a SQuAD dataset: answer 0 of question 'q' has no string 'text'"),
    ("read_dataset", '{"data": [{"paragraphs": [{"qas": [{"id": "q", "answers": []}]}, '
                     '{"qas": [{"id": "q", "answers": []}]}]}]}',
     r"d\.json: question id 'q' appears twice"),
    ("read_dataset", '{"data": []}', r"d\.json: the dataset has no questions"),
    ("read_predictions", '["Paris"]', r"d\.json: predictions must be a JSON object \{question "
                                      r"id: string\}, not a list"),
    ("read_predictions", '{"q1": ["Paris"]}',
     r"d\.json: the prediction for 'q1' is \['Paris'\], not a string"),
    ("read_na_probs", '{"q1": "0.5"}', r"d\.json: the null probability of 'q1' is '0\.5', not "
                                       r"a number"),
])
def test_bad_files_are_user_errors_naming_the_file(tmp_path, reader, text, message):
  path = _write(tmp_path / "d.json", text)
  with pytest.raises(cli.UserError, match=message):
    getattr(evaluation, reader)(path)


def test_missing_file_and_missing_null_probability(shared_dir, tmp_path):
  with pytest.raises(cli.UserError, match=r"predictions file .*nope\.json: not found"):
    evaluation.read_predictions(str(tmp_path / "nope.json"))
  data, preds, _ = V2_HARD
  with pytest.raises(evaluation.EvaluationError,
                     match=r"^probs\.json: no null probability for 3782 of the 3782 questions"):
    evaluation.evaluate(evaluation.read_dataset(shared_dir / data),
                        evaluation.read_predictions(shared_dir / preds), {"x": 0.5},
                        na_prob_source="probs.json")


def test_reads_tensorflow_file_systems(shared_dir):
  tf = pytest.importorskip("tensorflow")
  paths = []
  for name, path in zip(("data", "preds"), PREDICT200):
    paths.append(f"ram://squad_evaluation/{name}.json")
    tf.io.gfile.copy(str(shared_dir / path), paths[-1], overwrite=True)
  metrics = evaluation.evaluate(evaluation.read_dataset(paths[0]),
                                evaluation.read_predictions(paths[1]))
  assert metrics == _official(shared_dir, "v1_predict200.eval.json")


def _cli(*args):
  return subprocess.run([sys.executable, str(REPO / "evaluate_squad.py"), *map(str, args)],
                        capture_output=True, text=True, check=False,
                        env=dict(os.environ, PYTHONPATH=str(REPO)))


@pytest.mark.multiprocess
def test_cli_prints_the_metrics_with_the_official_option_names(shared_dir):
  data, preds, null_odds = PREDICT150
  out = _cli(shared_dir / data, shared_dir / preds.format("-1.0"), "--na-prob-file",
             shared_dir / null_odds)
  assert (out.returncode, out.stderr) == (0, ""), out.stderr
  assert json.loads(out.stdout) == _official(shared_dir, "v2_predict150.eval_thr-1.0.json")
  out = _cli(*(shared_dir / path for path in PREDICT200))
  assert out.stdout == json.dumps(_official(shared_dir, "v1_predict200.eval.json")) + "\n"


@pytest.mark.multiprocess
def test_cli_writes_out_file(shared_dir, tmp_path):
  data, preds, na_probs = V2_HARD
  target = tmp_path / "results" / "eval.json"
  target.parent.mkdir()
  out = _cli(shared_dir / data, shared_dir / preds, "-n", shared_dir / na_probs, "-t", "0.5",
             "--out_file", target, "--version", "2.0")
  assert (out.returncode, out.stdout, out.stderr) == (0, "", ""), out.stderr
  assert _load(target) == _official(shared_dir, "v2_hard.eval.na_prob_thresh0.5.json")
  assert os.listdir(target.parent) == ["eval.json"]  # no temporary left


@pytest.mark.multiprocess
@pytest.mark.parametrize("args, message", [
    (["PREDS"], "expected two arguments, data_file and pred_file; got 1"),
    (["PREDS", "DATA"], "PREDS: not a SQuAD dataset: the top level has no list 'data'"),
    (["DATA", "PREDS", "--na_prob_file", "nope.json"], "null-probability file nope.json: "
                                                       "not found"),
])
def test_cli_errors_are_one_line_and_exit_1(shared_dir, args, message):
  paths = {"DATA": str(shared_dir / PREDICT200[0]), "PREDS": str(shared_dir / PREDICT200[1])}
  out = _cli(*(paths.get(arg, arg) for arg in args))
  for name, path in paths.items():
    message = message.replace(name, path)
  assert (out.returncode, out.stdout, out.stderr) == (1, "",
                                                      f"evaluate_squad: error: {message}\n")
