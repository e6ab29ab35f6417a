"""run_squad end to end on Google's tiny checkpoint: v1 through the CLI, v2 through the library.

Training files are fixture question sets cut to first answers (Google's reader needs exactly
one answer per training question); predict files are as published.
"""

import json
import math
import os
import subprocess
import sys

import pytest

from squad import evaluation, run
from tests.paths import REPO
from tests.squad_fixtures import first_answers_only, write_json

SETTINGS = dict(max_seq_length=128, doc_stride=64, max_query_length=32)


@pytest.fixture(scope="module")
def tiny(shared_dir):
  return shared_dir / "fixtures" / "google_bert_tiny"


@pytest.fixture(scope="module")
def inputs(shared_dir):
  return shared_dir / "fixtures" / "squad" / "inputs"


def _question_ids(path):
  with open(path, encoding="utf-8") as f:
    return [qa["id"] for article in json.load(f)["data"] for paragraph in article["paragraphs"]
            for qa in paragraph["qas"]]


@pytest.mark.slow
@pytest.mark.multiprocess
def test_v1_train_and_predict_through_the_cli(tiny, inputs, tmp_path):
  with open(inputs / "v1_sel128.json", encoding="utf-8") as f:
    train_file = write_json(tmp_path / "train.json", first_answers_only(json.load(f)))
  predict_file = str(inputs / "v1_first20_384.json")
  output_dir = tmp_path / "out"
  command = [sys.executable, os.path.join(REPO, "run_squad.py"),
             f"--vocab_file={tiny}/vocab.txt", f"--bert_config_file={tiny}/bert_config.json",
             f"--init_checkpoint={tiny}/bert_model.ckpt", f"--train_file={train_file}",
             f"--predict_file={predict_file}", f"--output_dir={output_dir}", "--do_train",
             "--do_predict", "--train_batch_size=16", "--num_train_epochs=1",
             "--learning_rate=1e-4", "--predict_batch_size=7", "--seed=1"] + [
                 f"--{name}={value}" for name, value in SETTINGS.items()]
  out = subprocess.run(command, capture_output=True, text=True, check=False,
                       env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  assert out.returncode == 0, out.stderr[-3000:]
  names = sorted(os.listdir(output_dir))
  for name in ("train.tf_record", "eval.tf_record", "predictions.json",
               "nbest_predictions.json", "eval_results.txt", "model.ckpt-5.index"):
    assert name in names, names
  assert "null_odds.json" not in names
  with open(output_dir / "predictions.json", encoding="utf-8") as f:
    predictions = json.load(f)
  assert list(predictions) == _question_ids(predict_file)
  with open(output_dir / "nbest_predictions.json", encoding="utf-8") as f:
    nbest = json.load(f)
  for qid, entries in nbest.items():
    assert 1 <= len(entries) <= 20 and entries[0]["text"] == predictions[qid]
    assert sum(e["probability"] for e in entries) == pytest.approx(1.0, abs=1e-6)
  with open(output_dir / "eval_results.txt", encoding="utf-8") as f:
    results = dict(line.rstrip("\n").split(" = ") for line in f)
  assert sorted(results) == ["exact_match", "f1", "global_step"]
  assert results["global_step"] == "5"  # int(82 questions / 16 * 1 epoch)
  assert 0.0 <= float(results["exact_match"]) <= float(results["f1"]) <= 100.0


def _v2_options(tiny, inputs, tmp_path, **overrides):
  values = dict(vocab_file=str(tiny / "vocab.txt"), init_checkpoint=str(tiny / "bert_model.ckpt"),
                predict_file=str(inputs / "v2_sel128.json"), output_dir=str(tmp_path / "out"),
                do_predict=True, version_2_with_negative=True, predict_batch_size=16, **SETTINGS)
  values.update(overrides)
  return run.SquadOptions(**values)


@pytest.mark.slow
def test_v2_predict_and_tune_the_null_threshold(tiny, inputs, tmp_path):
  """Google's README recipe for v2.0 in one run: the predictions written score the best F1."""
  _, plain = run.run_squad(_v2_options(tiny, inputs, tmp_path / "plain"))["predict"]
  assert list(plain)[:10] == ["exact", "f1", "total", "HasAns_exact", "HasAns_f1",
                              "HasAns_total", "NoAns_exact", "NoAns_f1", "NoAns_total",
                              "best_exact"]
  predictions, tuned = run.run_squad(
      _v2_options(tiny, inputs, tmp_path / "tuned", tune_null_threshold=True))["predict"]
  out = tmp_path / "tuned" / "out"
  with open(out / "null_odds.json", encoding="utf-8") as f:
    null_odds = json.load(f)
  with open(out / "nbest_predictions.json", encoding="utf-8") as f:
    best_text = {qid: next(e["text"] for e in entries if e["text"])
                 for qid, entries in json.load(f).items()}
  assert list(null_odds) == list(predictions) == _question_ids(inputs / "v2_sel128.json")
  threshold = tuned["null_score_diff_threshold"]
  assert predictions == {qid: "" if odds > threshold else best_text[qid]
                         for qid, odds in null_odds.items()}
  # No other threshold does better: every distinct one, and "no answer anywhere".
  dataset = evaluation.read_dataset(inputs / "v2_sel128.json")
  f1s = [evaluation.evaluate(dataset, {qid: "" if odds > t else best_text[qid]
                                       for qid, odds in null_odds.items()})["f1"]
         for t in [-math.inf] + sorted(null_odds.values())]
  assert tuned["f1"] == max(f1s)
  with open(out / "eval_results.txt", encoding="utf-8") as f:
    assert "null_score_diff_threshold = " in f.read()


@pytest.mark.parametrize("overrides, message", [
    (dict(do_predict=False), "At least one of `do_train` or `do_predict` must be True"),
    (dict(do_train=True), "If `do_train` is True, then `train_file` must be specified"),
    (dict(max_query_length=125), r"The max_seq_length \(128\) must be greater than "
                                 r"max_query_length \(125\) \+ 3"),
    (dict(version_2_with_negative=False, tune_null_threshold=True),
     "--tune_null_threshold is for --version_2_with_negative"),
    (dict(doc_stride=0), "doc_stride"),
])
def test_googles_flag_checks(tiny, inputs, tmp_path, overrides, message):
  with pytest.raises(ValueError, match=message):
    _v2_options(tiny, inputs, tmp_path, **overrides)


def test_sequence_longer_than_the_model_is_refused_before_any_work(tiny, inputs, tmp_path):
  with pytest.raises(ValueError, match="Cannot use sequence length 1024 because the BERT model "
                                       "was only trained up to sequence length 512"):
    run.run_squad(_v2_options(tiny, inputs, tmp_path, max_seq_length=1024))
  assert not (tmp_path / "out").exists()


def test_cli_error_is_one_line(tiny, tmp_path):
  out = subprocess.run(
      [sys.executable, os.path.join(REPO, "run_squad.py"), f"--vocab_file={tiny}/vocab.txt",
       f"--output_dir={tmp_path}/out", f"--init_checkpoint={tiny}/bert_model.ckpt",
       "--do_predict", f"--predict_file={tmp_path}/missing.json"],
      capture_output=True, text=True, check=False, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  assert out.returncode == 1
  assert out.stderr.strip().splitlines()[-1].startswith("run_squad: error: SQuAD file ")
  assert "missing.json" in out.stderr and "Traceback" not in out.stderr


def _without_answers(inputs, tmp_path):
  """v1_first20_384.json as a user's own questions: no `answers` key anywhere."""
  with open(inputs / "v1_first20_384.json", encoding="utf-8") as f:
    data = json.load(f)
  for article in data["data"]:
    for paragraph in article["paragraphs"]:
      for qa in paragraph["qas"]:
        del qa["answers"]
  return data


def test_questions_without_answers_are_predicted_without_scores(tiny, inputs, tmp_path):
  predict_file = write_json(tmp_path / "questions.json", _without_answers(inputs, tmp_path))
  predictions, results = run.run_squad(_v2_options(
      tiny, inputs, tmp_path, predict_file=predict_file, version_2_with_negative=False))["predict"]
  assert results is None and list(predictions) == _question_ids(predict_file)
  assert sorted(os.listdir(tmp_path / "out")) == ["eval.tf_record", "nbest_predictions.json",
                                                  "predictions.json"]


def test_a_bad_predict_file_is_refused_before_training(tiny, inputs, tmp_path):
  data = _without_answers(inputs, tmp_path)
  data["data"][0]["paragraphs"][0]["qas"][0]["answers"] = [{"answer_start": 0}]
  predict_file = write_json(tmp_path / "questions.json", data)
  with open(inputs / "v1_sel128.json", encoding="utf-8") as f:
    train_file = write_json(tmp_path / "train.json", first_answers_only(json.load(f)))
  with pytest.raises(evaluation.EvaluationError, match=r"questions\.json: not a SQuAD dataset: "
                                                       r"answer 0 of question '.*' has no string"):
    run.run_squad(_v2_options(tiny, inputs, tmp_path, predict_file=predict_file,
                              train_file=train_file, do_train=True,
                              version_2_with_negative=False))
  assert not (tmp_path / "out").exists() or not os.listdir(tmp_path / "out")
