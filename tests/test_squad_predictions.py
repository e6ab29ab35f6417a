"""squad.predictions against the outputs of Google's run_squad.py (shared/fixtures/squad)."""

import json
import math
import types

import numpy as np
import pytest

import fileio
from squad import examples as squad_examples
from squad import features as squad_features
from squad import predictions
from tokenization import FullTokenizer

N_BEST, MAX_ANSWER = 20, 30
NBEST_KEYS = ["text", "probability", "start_logit", "end_logit"]
EMPTY_NBEST = [{"text": "empty", "probability": 1.0, "start_logit": 0.0, "end_logit": 0.0}]


@pytest.fixture(scope="module")
def squad_dir(shared_dir):
  return shared_dir / "fixtures" / "squad"


@pytest.fixture(scope="module")
def summary(squad_dir):
  return json.loads((squad_dir / "predictions" / "summary.json").read_text())


def _load_inputs(squad_dir, google_vocab, name, version_2):
  """Eval-mode examples and features of inputs/<name>.json at 128/64/32, and their logits."""
  examples, skipped = squad_examples.read_squad_examples(
      str(squad_dir / "inputs" / f"{name}.json"), False, version_2)
  assert not skipped
  features = squad_features.convert_examples_to_features(
      examples, FullTokenizer(google_vocab, do_lower_case=True), 128, 64, 32, False)
  with open(squad_dir / "predictions" / f"{name}.logits.jsonl", encoding="utf-8") as f:
    rows = [json.loads(line) for line in f]
  results = [predictions.RawResult(row["unique_id"], np.asarray(row["start_logits"], np.float32),
                                   np.asarray(row["end_logits"], np.float32)) for row in rows]
  assert sorted(r.unique_id for r in results) == [f.unique_id for f in features]
  return examples, features, results


@pytest.fixture(scope="module")
def v1_inputs(squad_dir, google_vocab):
  return _load_inputs(squad_dir, google_vocab, "v1_predict200", version_2=False)


@pytest.fixture(scope="module")
def v2_inputs(squad_dir, google_vocab):
  return _load_inputs(squad_dir, google_vocab, "v2_predict150", version_2=True)


def _read_json(path):
  return json.loads(path.read_text(encoding="utf-8"))


def _write_and_read(outputs, directory):
  """Writes `outputs` under `directory`; returns the file texts by name (None if not written)."""
  paths = {name: f"{directory}/{name}"
           for name in ("predictions.json", "nbest_predictions.json", "null_odds.json")}
  predictions.write_predictions(outputs, *paths.values())
  texts = {}
  for name, path in paths.items():
    texts[name] = None
    if fileio.exists(path):
      with fileio.open_file(path, "rb") as f:
        texts[name] = f.read().decode("utf-8")
  return texts


def _assert_nbest_matches(got, want):
  """Same ids, texts and order; exact logits; probabilities within 1e-6 (README tolerances)."""
  assert list(got) == list(want)
  for qas_id, want_entries in want.items():
    got_entries = got[qas_id]
    assert all(list(entry) == NBEST_KEYS for entry in got_entries)
    assert [e["text"] for e in got_entries] == [e["text"] for e in want_entries], qas_id
    assert ([(e["start_logit"], e["end_logit"]) for e in got_entries]
            == [(e["start_logit"], e["end_logit"]) for e in want_entries]), qas_id
    np.testing.assert_allclose([e["probability"] for e in got_entries],
                               [e["probability"] for e in want_entries], rtol=0, atol=1e-6)


def _without(mapping, ids):
  return {key: value for key, value in mapping.items() if key not in ids}


# --- get_final_text ---------------------------------------------------------------------------


def test_get_final_text_matches_google_on_every_case(squad_dir):
  path = squad_dir / "final_text" / "get_final_text_cases.jsonl"
  with open(path, encoding="utf-8") as f:
    cases = [json.loads(line) for line in f]
  assert len(cases) == 327
  wrong = [(case["id"], case["branch"]) for case in cases
           if predictions.get_final_text(case["pred_text"], case["orig_text"],
                                         case["do_lower_case"]) != case["output"]]
  assert not wrong


# --- parity with Google's write_predictions ---------------------------------------------------


@pytest.fixture(scope="module")
def v1_outputs(v1_inputs):
  return predictions.compute_predictions(*v1_inputs, N_BEST, MAX_ANSWER, True)


def test_v1_predictions_match_google(v1_outputs, squad_dir, tmp_path):
  outputs = v1_outputs
  assert outputs.null_odds is None
  texts = _write_and_read(outputs, tmp_path)
  want_dir = squad_dir / "predictions" / "v1_predict200"
  # Texts only, so byte for byte; the writer's layout is json.dumps(indent=4) plus "\n".
  assert texts["predictions.json"] == (want_dir / "predictions.json").read_text()
  assert texts["nbest_predictions.json"] == json.dumps(outputs.nbest, indent=4) + "\n"
  assert texts["null_odds.json"] is None
  _assert_nbest_matches(json.loads(texts["nbest_predictions.json"]),
                        _read_json(want_dir / "nbest_predictions.json"))


def test_v1_example_without_valid_span_predicts_empty_nonce(v1_outputs, summary):
  ids = summary["v1_predict200"]["no_valid_span_override_qids"]
  assert len(ids) == 2
  for qas_id in ids:
    assert v1_outputs.predictions[qas_id] == "empty"
    assert v1_outputs.nbest[qas_id] == EMPTY_NBEST


@pytest.mark.parametrize("threshold", [0.0, -1.0])
def test_v2_predictions_match_google(v2_inputs, squad_dir, summary, tmp_path, threshold):
  """All 150 examples go in; Google's files hold the 147 that do not crash its code."""
  outputs = predictions.compute_predictions(
      *v2_inputs, N_BEST, MAX_ANSWER, True, version_2_with_negative=True,
      null_score_diff_threshold=threshold)
  texts = _write_and_read(outputs, tmp_path)
  assert texts["null_odds.json"] == json.dumps(outputs.null_odds, indent=4) + "\n"
  crash_ids = set(summary["v2_predict150"]["crashing_qids"])
  assert len(crash_ids) == 3
  want_dir = squad_dir / "predictions" / "v2_predict150"

  got_predictions = json.loads(texts["predictions.json"])
  assert (list(_without(got_predictions, crash_ids).items())
          == list(_read_json(want_dir / f"predictions_thr{threshold}.json").items()))
  _assert_nbest_matches(_without(json.loads(texts["nbest_predictions.json"]), crash_ids),
                        _read_json(want_dir / "nbest_predictions.json"))
  got_odds = _without(json.loads(texts["null_odds.json"]), crash_ids)
  want_odds = _read_json(want_dir / "null_odds.json")
  assert list(got_odds) == list(want_odds)
  np.testing.assert_allclose(list(got_odds.values()), list(want_odds.values()), rtol=0, atol=1e-6)


def test_v2_example_without_valid_span_follows_hf_rule(v2_inputs, summary):
  """Google crashes on these; here "empty" (logits 0) leads the n-best, null odds = score_null."""
  crashing = summary["v2_predict150"]["crashing_qids"]
  for threshold in (0.0, -1.0, 20.0):
    outputs = predictions.compute_predictions(
        *v2_inputs, N_BEST, MAX_ANSWER, True, version_2_with_negative=True,
        null_score_diff_threshold=threshold)
    for qas_id, record in crashing.items():
      score_null = record["score_null"]
      nbest = outputs.nbest[qas_id]
      assert [e["text"] for e in nbest] == ["empty", ""]
      assert (nbest[0]["start_logit"], nbest[0]["end_logit"]) == (0.0, 0.0)
      assert nbest[1]["start_logit"] + nbest[1]["end_logit"] == pytest.approx(score_null, abs=1e-6)
      p_empty = 1.0 / (1.0 + math.exp(score_null))
      np.testing.assert_allclose([e["probability"] for e in nbest], [p_empty, 1.0 - p_empty],
                                 rtol=0, atol=1e-6)
      assert outputs.null_odds[qas_id] == pytest.approx(score_null, abs=1e-6)
      # Every score_null here lies between 0 and 20.
      want = record[f"hf_nonce_rule_prediction_thr{threshold}"] if threshold < 20 else "empty"
      assert outputs.predictions[qas_id] == want


# --- hand-made windows: ties, duplicates, the writer ------------------------------------------


def _toy(windows, max_context=True, max_answer_length=30, **kwargs):
  """compute_predictions on one example, "Aa b-c", shown by identical windows.

  Each window is `[CLS] q [SEP] aa b - c [SEP]`; `windows` holds the start and
  end logits of each. `max_context` applies to the tokens of "b-c".
  """
  example = types.SimpleNamespace(qas_id="q1", doc_tokens=["Aa", "b-c"])
  features, results = [], []
  for unique_id, (start_logits, end_logits) in enumerate(windows):
    features.append(types.SimpleNamespace(
        unique_id=unique_id, example_index=0,
        tokens=["[CLS]", "q", "[SEP]", "aa", "b", "-", "c", "[SEP]"],
        token_to_orig_map={3: 0, 4: 1, 5: 1, 6: 1},
        token_is_max_context={3: True, 4: max_context, 5: max_context, 6: max_context}))
    results.append(predictions.RawResult(unique_id, np.asarray(start_logits, np.float32),
                                         np.asarray(end_logits, np.float32)))
  return predictions.compute_predictions([example], features, results, 20, max_answer_length,
                                         True, **kwargs)


def test_ties_keep_window_then_position_order_and_duplicate_texts_are_dropped():
  # Window 1 scores every span 0. Window 2 scores "aa" as a start 1, as an end 1 too.
  bump = [0.0, 0, 0, 1, 0, 0, 0, 0]
  outputs = _toy([([0.0] * 8, [0.0] * 8), (bump, bump)])
  nbest = outputs.nbest["q1"]
  # Window 2's spans from "aa" come first (scores 2, then 1 in end order); at score 0
  # window 1 comes first by start then end position, skipping the texts already taken,
  # and window 2's equal texts are all dropped.
  assert [e["text"] for e in nbest] == [
      "Aa", "Aa b", "Aa b-", "Aa b-c", "b", "b-", "b-c", "-", "-c", "c"]
  assert [e["start_logit"] + e["end_logit"] for e in nbest] == [2.0] + [1.0] * 3 + [0.0] * 6
  assert outputs.predictions["q1"] == "Aa"
  weights = np.exp([2.0] + [1.0] * 3 + [0.0] * 6)
  np.testing.assert_allclose([e["probability"] for e in nbest], weights / weights.sum(),
                             rtol=0, atol=1e-12)


def test_filters_max_context_and_max_answer_length():
  # "b-c" has no maximum context, so only spans starting at "aa" remain; at most 2 tokens.
  outputs = _toy([([0.0] * 8, [0.0] * 8)], max_context=False, max_answer_length=2)
  assert [e["text"] for e in outputs.nbest["q1"]] == ["Aa", "Aa b"]


def test_writer_uses_fileio_paths_and_needs_null_odds_path_for_v2():
  outputs = _toy([([0.0, 0, 0, 2, 0, 0, 0, 0], [1.0, 0, 0, 0, 0, 0, 3, 0])],
                 version_2_with_negative=True)
  # The best span "Aa b-c" scores 2 + 3; [CLS] scores 0 + 1.
  assert outputs.predictions == {"q1": "Aa b-c"}
  assert outputs.null_odds == {"q1": -4.0}
  null_entries = [e for e in outputs.nbest["q1"] if not e["text"]]
  assert [(e["start_logit"], e["end_logit"]) for e in null_entries] == [(0.0, 1.0)]
  texts = _write_and_read(outputs, "ram://squad_predictions")
  assert json.loads(texts["predictions.json"]) == outputs.predictions
  assert json.loads(texts["null_odds.json"]) == outputs.null_odds
  with pytest.raises(ValueError, match="output_null_log_odds_file"):
    predictions.write_predictions(outputs, "ram://squad_predictions/p.json",
                                  "ram://squad_predictions/n.json")


def test_missing_results_and_windowless_v2_examples_are_errors():
  example = types.SimpleNamespace(qas_id="q1", doc_tokens=[])
  feature = types.SimpleNamespace(unique_id=5, example_index=0)
  with pytest.raises(ValueError, match="no result for feature unique_id 5"):
    predictions.compute_predictions([example], [feature], [], 20, 30, True)
  with pytest.raises(ValueError, match="q1 has no features"):
    predictions.compute_predictions([example], [], [], 20, 30, True, version_2_with_negative=True)
  # Without version 2, Google's "empty" stands in.
  outputs = predictions.compute_predictions([example], [], [], 20, 30, True)
  assert outputs.nbest == {"q1": EMPTY_NBEST}
