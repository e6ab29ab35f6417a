"""squad.features / squad.records: exact parity with Google's convert_examples_to_features
(shared/fixtures/squad) and a TFRecord round trip."""

import dataclasses
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from squad import features as features_lib
from squad import (convert_examples_to_features, feature_spec, generate_features,
                   write_features)
from tests.squad_fixtures import SQUAD_CASES, read_jsonl, read_squad_fixture_set, squad_fixture_dir
from tokenization import FullTokenizer


@pytest.fixture(scope="module")
def tokenizer(google_vocab):
  return FullTokenizer(google_vocab, do_lower_case=True)


def settings(shared_dir, name):
  """(max_seq_length, doc_stride, max_query_length) of a fixture set."""
  summary = json.loads((squad_fixture_dir(shared_dir) / "features" / "summary.json").read_text())
  return tuple(summary[name][key] for key in ("max_seq_length", "doc_stride", "max_query_length"))


def fixture_features(shared_dir, tmp_path, tokenizer, name, mode):
  """(examples, our features) of a fixture set, converted with its settings."""
  examples, _ = read_squad_fixture_set(shared_dir, tmp_path, name, mode)
  return examples, convert_examples_to_features(examples, tokenizer, *settings(shared_dir, name),
                                                is_training=mode == "train")


@pytest.mark.parametrize("name,mode", SQUAD_CASES)
def test_features_match_google(shared_dir, tmp_path, tokenizer, name, mode):
  examples, features = fixture_features(shared_dir, tmp_path, tokenizer, name, mode)
  expected = read_jsonl(
      squad_fixture_dir(shared_dir) / "features" / f"{name}.{mode}.features.jsonl")
  assert len(features) == len(expected)
  for feature, want in zip(features, expected):
    got = dataclasses.asdict(feature)
    got["qas_id"] = examples[feature.example_index].qas_id
    for field in ("token_to_orig_map", "token_is_max_context"):
      assert all(isinstance(k, int) for k in got[field])
      got[field] = {str(k): v for k, v in got[field].items()}
    if mode == "eval":
      assert (got.pop("start_position"), got.pop("end_position"), got.pop("is_impossible")) == (
          None, None, None)
    assert got == want, feature.unique_id


def test_contexts_need_not_be_shared(shared_dir, tmp_path, tokenizer):
  """Examples with their own copy of a context convert as those sharing one."""
  examples, features = fixture_features(shared_dir, tmp_path, tokenizer, "v2_sel128", "train")
  copies = [dataclasses.replace(e, doc_tokens=list(e.doc_tokens)) for e in examples]
  assert convert_examples_to_features(copies, tokenizer, 128, 64, 32, True) == features


def test_generate_features_streams(shared_dir, tmp_path, tokenizer):
  examples, features = fixture_features(shared_dir, tmp_path, tokenizer, "reader_edge", "eval")
  stream = generate_features(examples, tokenizer, 128, 64, 32, False)
  assert next(stream) == features[0]
  assert [features[0]] + list(stream) == features


def windows_by_the_rule(num_pieces, max_tokens, stride):
  """The README's rule, position by position: [(start, length, flags)]."""
  spans, start = [], 0
  while start < num_pieces:
    length = min(num_pieces - start, max_tokens)
    spans.append((start, length))
    if start + length == num_pieces:
      break
    start += min(length, stride)

  def score(span, p):
    return min(p - span[0], span[0] + span[1] - 1 - p) + 0.01 * span[1]
  result = []
  for index, (start, length) in enumerate(spans):
    flags = []
    for p in range(start, start + length):
      holding = [(score(s, p), i) for i, s in enumerate(spans) if s[0] <= p < s[0] + s[1]]
      best = max(value for value, _ in holding)
      flags.append(min(i for value, i in holding if value == best) == index)
    result.append((start, length, flags))
  return result


def test_windows_and_max_context_follow_the_rule():
  for num_pieces in range(1, 60):
    for max_tokens in (1, 2, 3, 5, 8, 21, 40):
      for stride in (1, 2, 3, 7, 50):
        assert features_lib._windows(num_pieces, max_tokens, stride) == windows_by_the_rule(
            num_pieces, max_tokens, stride), (num_pieces, max_tokens, stride)


@pytest.mark.parametrize("seq,stride,query", [(35, 8, 32), (128, 0, 32)])
def test_settings_that_cannot_work(tokenizer, seq, stride, query):
  with pytest.raises(ValueError):
    convert_examples_to_features([], tokenizer, seq, stride, query, False)

# --- TFRecords ----------------------------------------------------------------------------------


def parse_records(path, max_seq_length, is_training):
  spec = feature_spec(max_seq_length, is_training)
  return [{k: v.numpy() for k, v in tf.io.parse_single_example(record, spec).items()}
          for record in tf.data.TFRecordDataset(path)]


@pytest.mark.parametrize("mode", ["train", "eval"])
def test_records_round_trip(shared_dir, tmp_path, tokenizer, mode):
  _, features = fixture_features(shared_dir, tmp_path, tokenizer, "v2_sel128", mode)
  path = str(tmp_path / "out" / f"{mode}.tf_record")
  assert write_features(iter(features), path, is_training=mode == "train") == len(features)
  assert os.listdir(tmp_path / "out") == [f"{mode}.tf_record"]  # no temporary left
  records = parse_records(path, 128, mode == "train")
  assert len(records) == len(features)
  for record, feature in zip(records, features):
    want = {"unique_ids": feature.unique_id, "input_ids": feature.input_ids,
            "input_mask": feature.input_mask, "segment_ids": feature.segment_ids}
    if mode == "train":
      want.update(start_positions=feature.start_position, end_positions=feature.end_position,
                  is_impossible=int(feature.is_impossible))
    assert record.keys() == want.keys()
    for key, value in want.items():
      assert record[key].dtype == np.int64
      np.testing.assert_array_equal(record[key], value, err_msg=key)
  if mode == "train":
    assert sum(r["is_impossible"] for r in records) == 79  # summary.json's impossible windows


def test_failed_write_leaves_no_file(shared_dir, tmp_path, tokenizer):
  _, features = fixture_features(shared_dir, tmp_path, tokenizer, "reader_edge", "eval")
  path = tmp_path / "out.tf_record"
  path.write_bytes(b"old")

  def failing():
    yield features[0]
    raise RuntimeError("interrupted")
  with pytest.raises(RuntimeError):
    write_features(failing(), str(path), is_training=False)
  assert path.read_bytes() == b"old" and os.listdir(tmp_path) == ["out.tf_record"]

