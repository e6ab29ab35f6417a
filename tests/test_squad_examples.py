"""squad.examples: parity with Google's read_squad_examples (shared/fixtures/squad), errors."""

import dataclasses
import json
import logging

import pytest

from cli import UserError
from squad import SquadFormatError, read_squad_examples
from tests.squad_fixtures import (SQUAD_CASES, first_answers_only, read_jsonl,
                                  read_squad_fixture_set, squad_fixture_dir, write_json)

@pytest.mark.parametrize("name,mode", SQUAD_CASES)
def test_examples_match_google(shared_dir, tmp_path, caplog, name, mode):
  with caplog.at_level(logging.WARNING):
    examples, skipped = read_squad_fixture_set(shared_dir, tmp_path, name, mode)
  expected = read_jsonl(
      squad_fixture_dir(shared_dir) / "features" / f"{name}.{mode}.examples.jsonl")
  assert len(examples) == len(expected)
  for index, (example, want) in enumerate(zip(examples, expected)):
    assert dict(example_index=index, **dataclasses.asdict(example)) == want, example.qas_id
  summary = json.loads((squad_fixture_dir(shared_dir) / "features" / "summary.json").read_text())
  assert skipped == summary[name][mode].get("skipped_by_reader", [])
  warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
  assert warnings == summary[name][mode]["reader_warnings"]


def test_reader_edge_skips_only_in_training(shared_dir, tmp_path):
  train, skipped = read_squad_fixture_set(shared_dir, tmp_path, "reader_edge", "train")
  evaluation, _ = read_squad_fixture_set(shared_dir, tmp_path, "reader_edge", "eval")
  assert skipped == ["56be4db0acb8001400a502ec_nbsp", "56be4eafacb8001400a50302_badoffset"]
  assert [e.qas_id for e in evaluation if e.qas_id not in skipped] == [e.qas_id for e in train]


def test_questions_of_a_paragraph_share_doc_tokens(shared_dir, tmp_path):
  examples, _ = read_squad_fixture_set(shared_dir, tmp_path, "v1_first20_384", "eval")
  assert examples[0].doc_tokens is examples[1].doc_tokens  # the converter relies on it


def test_reads_tensorflow_file_systems(shared_dir):
  import tensorflow as tf  # pylint: disable=import-outside-toplevel  (only this test needs it)
  source = squad_fixture_dir(shared_dir) / "inputs" / "v1_first20_384.json"
  path = "ram://squad/v1_first20_384.json"
  tf.io.gfile.makedirs("ram://squad")
  with tf.io.gfile.GFile(path, "wb") as f:
    f.write(source.read_bytes())
  assert read_squad_examples(path, False, False) == read_squad_examples(str(source), False, False)

# --- errors a user can make ---------------------------------------------------------------------


def squad_file(tmp_path, qa, context="The cat sat on the mat."):
  return write_json(tmp_path / "data.json",
                    {"data": [{"title": "t", "paragraphs": [{"context": context, "qas": [qa]}]}]})


def test_error_is_a_user_error():
  assert issubclass(SquadFormatError, UserError) and issubclass(SquadFormatError, ValueError)


def test_missing_file(tmp_path):
  with pytest.raises(SquadFormatError, match="SQuAD file .*nope.json: not found"):
    read_squad_examples(str(tmp_path / "nope.json"), True, False)
  with pytest.raises(SquadFormatError, match="SQuAD file .*: a directory, not a file"):
    read_squad_examples(str(tmp_path), True, False)


def test_not_json(tmp_path):
  path = tmp_path / "bad.json"
  path.write_text('{"data": [', encoding="utf-8")
  with pytest.raises(SquadFormatError, match="bad.json: not valid JSON"):
    read_squad_examples(str(path), False, False)


@pytest.mark.parametrize("data,message", [
    ([1, 2], "not a SQuAD file"),
    ({"version": "1.1"}, "'data' is missing"),
    ({"data": {"paragraphs": []}}, "'data' should be a list"),
    ({"data": [{"paragraphs": [{"qas": []}]}]}, "'context' is missing"),
    ({"data": [{"paragraphs": [{"context": "x", "qas": [{"id": "q1"}]}]}]},
     "question q1: not in SQuAD layout: 'question' is missing"),
])
def test_not_squad_layout(tmp_path, data, message):
  with pytest.raises(SquadFormatError, match=message):
    read_squad_examples(write_json(tmp_path / "x.json", data), False, False)


def test_training_needs_exactly_one_answer(shared_dir):
  # A dev set: several answers per question.
  path = str(squad_fixture_dir(shared_dir) / "inputs" / "v1_first20_384.json")
  with pytest.raises(SquadFormatError, match=r"question 56be4db0acb8001400a502ec: .*exactly 1 "
                                             r"answer, found 3"):
    read_squad_examples(path, True, False)
  assert len(read_squad_examples(path, False, False)[0]) == 20  # eval mode reads them


@pytest.mark.parametrize("is_training", [True, False])
def test_v2_data_needs_the_flag(shared_dir, tmp_path, is_training):
  with open(squad_fixture_dir(shared_dir) / "inputs" / "v2_sel128.json", encoding="utf-8") as f:
    path = write_json(tmp_path / "v2.json", first_answers_only(json.load(f)))
  with pytest.raises(SquadFormatError, match=r"v2.json, question \w+: .*unanswerable.*pass "
                                             "--version_2_with_negative"):
    read_squad_examples(path, is_training, False)


def test_answer_outside_the_context(tmp_path):
  path = squad_file(tmp_path, {"id": "q1", "question": "Where?",
                               "answers": [{"text": "the mat", "answer_start": 20}]})
  with pytest.raises(SquadFormatError, match="question q1: answer 'the mat' at answer_start 20 "
                                             "does not lie inside the context"):
    read_squad_examples(path, True, False)


def test_answer_word_span(tmp_path):
  path = squad_file(tmp_path, {"id": "q1", "question": "Where?",
                               "answers": [{"text": "the mat", "answer_start": 16}]},
                    context=" The cat\u202fsat on\u00a0the mat.\n")
  [example], _ = read_squad_examples(path, True, False)
  assert example.doc_tokens == ["The", "cat", "sat", "on\u00a0the", "mat."]
  assert (example.start_position, example.end_position) == (3, 4)
