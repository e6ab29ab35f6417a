"""Dynamic masking: unmasked records from create_pretraining_data, masked by run_pretraining.

The records are the static ones before masking; the in-pipeline masks follow
Google's rules (the statistics the static records are held to), differ at
every epoch, repeat for the same seed, and train.
"""

import io

import numpy as np
import pytest
import tensorflow as tf

from cli import FlagError
from fileio import InputError
import pretraining
from pretraining.dynamic_masking import DynamicMasker, masked_dataset_fn
from pretraining_data import features, pipeline
import tokenization
from tests.paths import SAMPLE
from tests.pretraining_jobs import (assert_googles_masking, assert_whole_words_masked,
                                    make_pretraining_records, pretraining_config_file,
                                    pretraining_options)

CORPUS_SEQ, CORPUS_PRED = 128, 20


def _parse(path, dynamic):
  spec = features.feature_spec(CORPUS_SEQ, CORPUS_PRED, dynamic)
  batch = next(iter(tf.data.TFRecordDataset(path).batch(1 << 20).map(
      lambda r: tf.io.parse_example(r, spec))))
  return {k: v.numpy() for k, v in batch.items()}


@pytest.fixture(scope="module")
def records(tmp_path_factory, shared_dir, google_vocab):
  """The same corpus written static and dynamic: {False: static, True: dynamic} arrays."""
  tmp = tmp_path_factory.mktemp("dynamic")
  out = {}
  for dynamic in (False, True):
    path = str(tmp / f"dynamic_{dynamic}.tfrecord")
    pipeline.run(pipeline.PretrainingDataOptions(
        input_file=str(shared_dir / "data" / "corpus" / "wikitext2_valid.txt"),
        output_file=path, vocab_file=google_vocab, dupe_factor=1, num_workers=1,
        dynamic_masking=dynamic), io.StringIO())
    out[dynamic] = _parse(path, dynamic)
  return out


def _mask(masker, rec, seed=(1, 2)):
  batch = {k: tf.constant(v, tf.int32) for k, v in rec.items()}
  return {k: v.numpy() for k, v in masker(batch, tf.constant(seed, tf.int64)).items()}


def test_dynamic_records_are_the_static_ones_unmasked(records):
  static, dynamic = records[False], records[True]
  assert set(dynamic) == {"input_ids", "input_mask", "segment_ids", "next_sentence_labels"}
  assert len(dynamic["input_ids"]) > 2000
  for name in ("input_mask", "segment_ids", "next_sentence_labels"):
    np.testing.assert_array_equal(dynamic[name], static[name])
  restored = static["input_ids"].copy()
  rows, slots = np.nonzero(static["masked_lm_weights"])
  restored[rows, static["masked_lm_positions"][rows, slots]] = (
      static["masked_lm_ids"][rows, slots])
  np.testing.assert_array_equal(dynamic["input_ids"], restored)


def test_in_pipeline_masks_follow_googles_rules(records, google_vocab):
  rec = records[True]
  out = _mask(DynamicMasker(google_vocab, CORPUS_PRED), rec)
  assert_googles_masking(out, CORPUS_PRED)
  real = out["masked_lm_weights"] > 0
  original = np.take_along_axis(rec["input_ids"], out["masked_lm_positions"], 1)
  np.testing.assert_array_equal(out["masked_lm_ids"][real], original[real])
  # Only the chosen positions change.
  changed = out["input_ids"] != rec["input_ids"]
  chosen = np.zeros_like(changed)
  np.put_along_axis(chosen, out["masked_lm_positions"], real, 1)
  assert not (changed & ~chosen).any()


def test_whole_word_masks_take_whole_words(records, google_vocab):
  rec = {k: v[:600] for k, v in records[True].items()}
  out = _mask(DynamicMasker(google_vocab, CORPUS_PRED, do_whole_word_mask=True), rec)
  tokenizer = tokenization.FullTokenizer(google_vocab)
  n = rec["input_mask"].sum(1)
  expected = np.minimum(CORPUS_PRED, np.maximum(1, np.rint(n * 0.15)))
  num_pred = out["masked_lm_weights"].sum(1)
  assert (num_pred <= expected).all() and (num_pred >= 1).all()
  assert num_pred.sum() > 0.97 * expected.sum()  # words rarely leave room unused
  checked = 0
  for i in range(len(n)):
    chosen = set(out["masked_lm_positions"][i, :int(num_pred[i])].tolist())
    tokens = tokenizer.convert_ids_to_tokens(rec["input_ids"][i, :n[i]].tolist())
    checked += assert_whole_words_masked(tokens, chosen)
  assert checked > 50


def test_new_masks_every_epoch_and_the_same_for_the_same_seed(records, google_vocab):
  rec = {k: tf.constant(v[:64], tf.int32) for k, v in records[True].items()}
  masker = DynamicMasker(google_vocab, CORPUS_PRED)

  def epochs(context):
    del context
    return tf.data.Dataset.from_tensors(rec).repeat(2)

  def positions(seed):
    dataset = masked_dataset_fn(epochs, masker, seed)(tf.distribute.InputContext())
    return [batch["masked_lm_positions"].numpy() for batch in dataset]

  first, second = positions(seed=7)
  assert (first != second).any(axis=1).mean() > 0.95  # nearly every row masked anew
  np.testing.assert_array_equal(positions(seed=7)[0], first)
  assert (positions(seed=8)[0] != first).any()


def test_masker_needs_the_special_tokens(tmp_path):
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n")
  with pytest.raises(tokenization.VocabError, match=r"lacks the special token\(s\) \[MASK\]"):
    DynamicMasker(str(vocab), 5)


@pytest.fixture(scope="module")
def sample_records(tmp_path_factory, pretraining_records):
  tmp = tmp_path_factory.mktemp("sample")
  (tmp / "dynamic").mkdir()
  return {True: make_pretraining_records(str(tmp / "dynamic"), dynamic_masking=True),
          False: pretraining_records,
          "config": pretraining_config_file(tmp / "bert_config.json")}


@pytest.mark.slow
def test_run_pretraining_trains_on_dynamic_records(sample_records, tmp_path):
  data = (",".join(sample_records[True]), sample_records["config"], None)
  options = pretraining_options(data, tmp_path / "out", do_eval=True, num_train_steps=20,
                                vocab_file=str(SAMPLE / "vocab.txt"), do_whole_word_mask=True)
  results = pretraining.run(options)
  assert np.isfinite(results["train"]["loss"])
  evaluation = results["eval"]
  assert evaluation["global_step"] == 20 and 0.0 < evaluation["masked_lm_accuracy"] <= 1.0
  vocab_size = len(tokenization.load_vocab(str(SAMPLE / "vocab.txt")))
  assert evaluation["masked_lm_loss"] < np.log(vocab_size) - 1.0  # learned: well below uniform


@pytest.mark.parametrize("which, flags, error, message", [
    (True, {}, FlagError, "holds records written with --dynamic_masking: pass --vocab_file"),
    (False, {"do_whole_word_mask": True}, FlagError,
     "apply to records written with --dynamic_masking; .* holds masked records"),
    ("mixed", {"vocab_file": str(SAMPLE / "vocab.txt")}, InputError,
     "do not mix records written with and without --dynamic_masking"),
])
def test_dynamic_masking_errors(sample_records, tmp_path, which, flags, error, message):
  files = ([sample_records[False][0], sample_records[True][0]] if which == "mixed"
           else sample_records[which])
  data = (",".join(files), sample_records["config"], None)
  with pytest.raises(error, match=message):
    pretraining.run(pretraining_options(data, tmp_path / "out", **flags))

