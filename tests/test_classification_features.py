"""Examples -> features (vs Google's outputs), TFRecord round trip, predict-set padding."""

import os

import numpy as np
import pytest
import tensorflow as tf

from classification import (InputExample, PaddingInputExample, convert_examples_to_features,
                            convert_single_example, pad_to_batch_multiple, write_test_results)
from classification.task import TRIM_MULTIPLE
from classification.tfrecords import feature_spec, file_based_convert_examples_to_features
import modeling
from tokenization import FullTokenizer
from tokenization.packing import truncate_seq_pair
from training import inputs
from training import task as task_lib

WORDS = ["the", "cat", "sat", "on", "mat", "dog", "ran", "far", "away", "today"]


def _dataset(path, seq_length, mode, batch_size, is_regression=False, **kwargs):
  """The training pipeline's dataset over one record file, for one input pipeline."""
  dataset_fn = inputs.tfrecord_dataset_fn([path], feature_spec(seq_length, is_regression), mode,
                                          batch_size, **kwargs)
  return dataset_fn(tf.distribute.InputContext())


@pytest.fixture(scope="module")
def tiny_tokenizer(tmp_path_factory):
  path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
  path.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]"] + WORDS) + "\n",
                  encoding="utf-8")
  return FullTokenizer(str(path), do_lower_case=True)


def ids(words):
  return [WORDS.index(w) + 4 for w in words.split()]


def test_matches_google_convert_single_example_on_minilm_reference(shared_dir, minilm_dir):
  ref = np.load(shared_dir / "fixtures" / "minilm_reference.npz")
  tokenizer = FullTokenizer(os.path.join(minilm_dir, "vocab.txt"), do_lower_case=True)
  for i in range(len(ref["text_a"])):
    text_b = str(ref["text_b"][i]) if ref["is_pair"][i] else None
    example = InputExample(f"ref-{i}", str(ref["text_a"][i]), text_b, "0")
    f = convert_single_example(i, example, ["0", "1"], 64, tokenizer)
    np.testing.assert_array_equal(f.input_ids, ref["input_ids"][i])
    np.testing.assert_array_equal(f.input_mask, ref["attention_mask"][i])
    np.testing.assert_array_equal(f.segment_ids, ref["token_type_ids"][i])
    assert f.label_id == 0 and f.is_real_example is True


@pytest.mark.parametrize("len_a,len_b,max_length,expected", [
    (5, 3, 6, (3, 3)),   # pop from the longer (a) until it fits
    (3, 3, 5, (3, 2)),   # tie: pop from b
    (4, 4, 5, (3, 2)),   # b, a, b
    (2, 7, 5, (2, 3)),
    (2, 2, 9, (2, 2)),   # already fits
])
def test_truncate_seq_pair(len_a, len_b, max_length, expected):
  a, b = list(range(len_a)), list(range(100, 100 + len_b))
  truncate_seq_pair(a, b, max_length)
  assert (len(a), len(b)) == expected
  assert a == list(range(expected[0])) and b == list(range(100, 100 + expected[1]))


def test_pair_layout_truncation_and_padding(tiny_tokenizer):
  e = InputExample("x", "the cat sat on the mat", "dog ran", "b")
  f = convert_single_example(0, e, ["a", "b"], 8, tiny_tokenizer)
  # 6 + 2 tokens into 8 - 3 = 5: a loses three from its end.
  assert f.input_ids == [2] + ids("the cat sat") + [3] + ids("dog ran") + [3]
  assert f.segment_ids == [0] * 5 + [1] * 3
  assert f.input_mask == [1] * 8 and f.label_id == 1
  f = convert_single_example(0, InputExample("y", "cat", "dog", "a"), ["a", "b"], 8,
                             tiny_tokenizer)
  assert f.input_ids == [2, *ids("cat"), 3, *ids("dog"), 3, 0, 0, 0]
  assert f.input_mask == [1] * 5 + [0] * 3 and f.segment_ids == [0, 0, 0, 1, 1, 0, 0, 0]


def test_single_segment_truncation_and_empty_text_b(tiny_tokenizer):
  e = InputExample("x", "the cat sat on the mat today", None, "a")
  f = convert_single_example(0, e, ["a"], 6, tiny_tokenizer)
  assert f.input_ids == [2] + ids("the cat sat on") + [3] and f.segment_ids == [0] * 6
  # A text_b with no tokens (whitespace, control characters) gives a single segment.
  for text_b in ("", "  ", "\x00"):
    f = convert_single_example(0, InputExample("y", "cat", text_b, "a"), ["a"], 6,
                               tiny_tokenizer)
    assert f.input_ids == [2, *ids("cat"), 3, 0, 0, 0] and f.segment_ids == [0] * 6


def test_regression_label_unknown_label_and_padding_example(tiny_tokenizer):
  f = convert_single_example(0, InputExample("s", "cat", "dog", 3.8), None, 8, tiny_tokenizer)
  assert f.label_id == 3.8 and isinstance(f.label_id, float)
  with pytest.raises(ValueError, match=r"example x: label 'c' is not in the label list"):
    convert_single_example(0, InputExample("x", "cat", None, "c"), ["a", "b"], 8, tiny_tokenizer)
  f = convert_single_example(0, PaddingInputExample(), ["a", "b"], 8, tiny_tokenizer)
  assert (f.input_ids, f.input_mask, f.segment_ids) == ([0] * 8, [0] * 8, [0] * 8)
  assert f.label_id == 0 and f.is_real_example is False


def test_pad_to_batch_multiple():
  examples = [InputExample(str(i), "cat") for i in range(10)]
  padded = pad_to_batch_multiple(examples, 4)
  assert len(padded) == 12 and padded[:10] == examples
  assert all(isinstance(e, PaddingInputExample) for e in padded[10:])
  assert pad_to_batch_multiple(examples[:8], 4) == examples[:8]
  assert len(examples) == 10  # the input list is not modified
  with pytest.raises(ValueError, match="batch_size must be positive"):
    pad_to_batch_multiple(examples, 0)


def _examples(n):
  rng = np.random.default_rng(0)
  out = []
  for i in range(n):
    a = " ".join(rng.choice(WORDS, size=rng.integers(1, 9)))
    b = " ".join(rng.choice(WORDS, size=rng.integers(0, 6))) or None
    out.append(InputExample(f"t-{i}", a, b, ["neg", "pos"][i % 2]))
  return out


def test_tfrecord_round_trip_with_google_feature_names(tmp_path, tiny_tokenizer):
  examples = _examples(7) + [PaddingInputExample()]
  path = str(tmp_path / "eval.tf_record")
  file_based_convert_examples_to_features(examples, ["neg", "pos"], 12, tiny_tokenizer, path)
  assert os.listdir(tmp_path) == ["eval.tf_record"]
  expected = convert_examples_to_features(examples, ["neg", "pos"], 12, tiny_tokenizer)
  # The raw records: Google's names and types.
  raw = tf.train.Example.FromString(next(iter(tf.data.TFRecordDataset(path))).numpy())
  assert set(raw.features.feature) == {"input_ids", "input_mask", "segment_ids", "label_ids",
                                       "is_real_example"}
  assert list(raw.features.feature["input_ids"].int64_list.value) == expected[0].input_ids
  assert list(raw.features.feature["label_ids"].int64_list.value) == [0]
  batches = list(_dataset(path, 12, task_lib.EVAL, 3))
  assert [len(b["input_ids"]) for b in batches] == [3, 3, 2]
  got = {k: np.concatenate([b[k].numpy() for b in batches]) for k in batches[0]}
  assert all(v.dtype == np.int32 for v in got.values())
  assert got["input_ids"].shape == (8, 12)
  np.testing.assert_array_equal(got["input_ids"], [f.input_ids for f in expected])
  np.testing.assert_array_equal(got["input_mask"], [f.input_mask for f in expected])
  np.testing.assert_array_equal(got["segment_ids"], [f.segment_ids for f in expected])
  np.testing.assert_array_equal(got["label_ids"], [f.label_id for f in expected])
  np.testing.assert_array_equal(got["is_real_example"], [1] * 7 + [0])


def test_batches_cut_to_their_longest_row_rounded_up(tmp_path, tiny_tokenizer):
  """The classifier's pipeline drops padding past each batch's longest row (rounded up to
  TRIM_MULTIPLE, never past max_seq_length); what is kept is the records' own values."""
  lengths = [3, 5, 4, 16, 30, 2]  # input_mask sums: [CLS] + words + [SEP]
  examples = [InputExample(str(i), " ".join(["cat"] * (n - 2)), None, "pos")
              for i, n in enumerate(lengths)]
  path = str(tmp_path / "eval.tf_record")
  file_based_convert_examples_to_features(examples, ["neg", "pos"], 40, tiny_tokenizer, path)
  full = next(iter(_dataset(path, 40, task_lib.EVAL, 6)))
  trim = (TRIM_MULTIPLE, modeling.INPUT_NAMES)
  batches = list(_dataset(path, 40, task_lib.EVAL, 3, trim=trim))
  assert TRIM_MULTIPLE == 16
  assert [b["input_ids"].shape[1] for b in batches] == [16, 32]  # longest rows 5 and 30
  assert [b["label_ids"].shape for b in batches] == [(3,), (3,)]
  for name in modeling.INPUT_NAMES:
    got = np.concatenate([np.pad(b[name].numpy(), [[0, 0], [0, 40 - b[name].shape[1]]])
                          for b in batches])
    np.testing.assert_array_equal(got, full[name].numpy())
  # A batch of full rows keeps max_seq_length, not the rounded-up 48.
  long = InputExample("long", " ".join(["cat"] * 60), None, "pos")
  file_based_convert_examples_to_features([long], ["neg", "pos"], 40, tiny_tokenizer, path)
  assert next(iter(_dataset(path, 40, task_lib.EVAL, 3, trim=trim)))["input_ids"].shape == (1, 40)


def test_regression_records_and_training_input(tmp_path, tiny_tokenizer):
  examples = [InputExample(str(i), "cat sat", "dog", i / 4) for i in range(5)]
  path = str(tmp_path / "train.tf_record")
  file_based_convert_examples_to_features(examples, None, 8, tiny_tokenizer, path)
  batches = list(_dataset(path, 8, task_lib.TRAIN, 4, is_regression=True, seed=1).take(5))
  # Training repeats the 5 records forever and keeps whole batches only.
  assert [b["input_ids"].shape for b in batches] == [(4, 8)] * 5
  labels = np.concatenate([b["label_ids"].numpy() for b in batches])
  assert labels.dtype == np.float32
  assert set(labels.tolist()) == {0.0, 0.25, 0.5, 0.75, 1.0}
  # Shuffled (seeded): not the file order repeated.
  assert labels.tolist() != [0.0, 0.25, 0.5, 0.75, 1.0] * 4


def test_predict_padding_gives_one_output_line_per_example(tmp_path, tiny_tokenizer):
  examples = _examples(5)
  padded = pad_to_batch_multiple(examples, 4)
  path = str(tmp_path / "predict.tf_record")
  file_based_convert_examples_to_features(padded, ["neg", "pos"], 10, tiny_tokenizer, path)
  batches = list(_dataset(path, 10, task_lib.PREDICT, 4, drop_remainder=True))
  # Every batch is full (as TPU needs); without padding the 5th example would be dropped.
  assert [len(b["input_ids"]) for b in batches] == [4, 4]
  real = np.concatenate([b["is_real_example"].numpy() for b in batches])
  assert real.tolist() == [1] * 5 + [0] * 3
  # A stand-in model output for all 8 rows, padding included.
  probabilities = [[0.25, 0.75]] * 8
  write_test_results(tmp_path / "test_results.tsv", probabilities, len(examples))
  assert (tmp_path / "test_results.tsv").read_text().splitlines() == ["0.25\t0.75"] * 5
