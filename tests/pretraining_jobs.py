"""run_pretraining's test job: records from sample_data, Google's masking statistics,
the tiny config and the options of a 40-step run."""

import io
import os

import numpy as np

import pretraining
from pretraining_data import pipeline
from tests.paths import SAMPLE
from tests.tiny_models import tiny_config_file

SEQ, PRED = 64, 10  # max_seq_length and max_predictions_per_seq of the sample records


def make_pretraining_records(directory, dynamic_masking=False):
  """Two TFRecord files from sample_data (2,867 instances at dupe_factor 5)."""
  files = [os.path.join(directory, name) for name in ("a.tfrecord", "b.tfrecord")]
  pipeline.run(pipeline.PretrainingDataOptions(
      input_file=str(SAMPLE / "corpus.txt"), output_file=",".join(files),
      vocab_file=str(SAMPLE / "vocab.txt"), max_seq_length=SEQ,
      max_predictions_per_seq=PRED, dupe_factor=5, num_workers=1,
      dynamic_masking=dynamic_masking), io.StringIO())
  return files


def assert_whole_words_masked(tokens, chosen):
  """Asserts each of Google's whole-word groups in `tokens` is masked all or not at all.

  A group is a candidate (neither [CLS] nor [SEP]) and the "##" pieces after it,
  even across the middle [SEP], as Google joins them. `chosen`: masked positions.
  Returns how many multi-piece groups were masked.
  """
  groups = []
  for j, token in enumerate(tokens):
    if token in ("[CLS]", "[SEP]"):
      continue
    if groups and token.startswith("##"):
      groups[-1].append(j)
    else:
      groups.append([j])
  masked_words = 0
  for group in groups:
    hit = set(chosen).intersection(group)
    assert not hit or hit == set(group), (tokens, group, chosen)
    masked_words += len(group) > 1 and bool(hit)
  return masked_words


def assert_googles_masking(rec, max_predictions, special_ids=(101, 102), mask_id=103):
  """Google's masked-LM statistics on parsed records {feature: [N, ...] array}.

  The exact count per instance, sorted distinct positions never on [CLS] / [SEP]
  (`special_ids`) or padding, and 80% [MASK] / 10% random / 10% kept within
  1.5 points (the records should hold tens of thousands of predictions).
  """
  ids, pos, lbl, w = (rec[k] for k in ("input_ids", "masked_lm_positions", "masked_lm_ids",
                                       "masked_lm_weights"))
  n = rec["input_mask"].sum(1)
  num_pred = (w > 0).sum(1)
  # Exactly Google's count: min(max_predictions, max(1, round(n * 0.15))).
  expected = np.minimum(max_predictions,
                        np.maximum(1, np.array([round(x * 0.15) for x in n.tolist()])))
  assert (num_pred == expected).all()
  assert (w.sum(1) == num_pred).all() and set(np.unique(w)) <= {0.0, 1.0}
  real = w > 0
  assert (pos[~real] == 0).all() and (lbl[~real] == 0).all()
  p = np.where(real, pos, ids.shape[1] + np.arange(max_predictions))
  assert (np.diff(p, axis=1) > 0).all()
  assert (pos[real] < n[:, None].repeat(max_predictions, 1)[real]).all()  # never padding
  at = np.take_along_axis(ids, pos, 1)
  assert not (np.isin(lbl, special_ids) & real).any() and (pos[real] > 0).all()
  total = real.sum()
  masked = (at == mask_id) & real
  kept = (at == lbl) & real & ~masked
  assert abs(masked.sum() / total - 0.8) < 0.015
  assert abs(kept.sum() / total - 0.1) < 0.015  # a random token equal to the original counts here
  assert abs((total - masked.sum() - kept.sum()) / total - 0.1) < 0.015
  # The masked share of real tokens is ~masked_lm_prob (rounding per instance).
  assert abs(total / n.sum() - 0.15) < 0.01


def pretraining_config_file(path, dropout=0.1):
  """The tiny config over sample_data/vocab.txt, 2 * SEQ positions, `dropout` throughout."""
  with open(SAMPLE / "vocab.txt", encoding="utf-8") as f:
    vocab_size = sum(1 for _ in f)
  return tiny_config_file(path, vocab_size, max_position_embeddings=2 * SEQ,
                          hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)


def pretraining_options(data, output_dir, **flags):
  """A 40-step run_pretraining job on `data` (input_file, bert_config_file, unused)."""
  input_file, config_file, _ = data
  values = dict(bert_config_file=config_file, input_file=input_file,
                output_dir=str(output_dir), max_seq_length=SEQ, max_predictions_per_seq=PRED,
                do_train=True, train_batch_size=16, learning_rate=2e-3, num_train_steps=40,
                num_warmup_steps=4, save_checkpoints_steps=20, iterations_per_loop=10,
                log_steps=10, max_eval_steps=5, seed=1)
  values.update(flags)
  return pretraining.PretrainingOptions(**values)
