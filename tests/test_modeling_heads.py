"""The pre-training heads: the decoder tied to the embeddings, Google's layout, and the last
layer at the masked positions only."""

import numpy as np
import pytest
import tensorflow as tf

import modeling
from tests.tiny_models import TINY_BERT, bert_inputs, pretraining_loss


def test_pretraining_heads_tie_decoder_and_use_googles_layout():
  model = modeling.build_pretraining_model(TINY_BERT)
  encoder = model.get_layer("bert")
  table = encoder.get_layer("embeddings").word_embeddings
  mlm = model.get_layer("cls_predictions")
  assert mlm.embedding_table is table
  assert model.get_layer("cls_seq_relationship").output_weights.shape == (2, 32)
  positions = np.array([[1, 2], [0, 0], [5, 3]], np.int32)
  out = model(dict(bert_inputs(), masked_lm_positions=positions))
  assert out["masked_lm_logits"].shape == (3, 2, 99)
  assert out["next_sentence_logits"].shape == (3, 2)
  # Tied weights are counted once.
  assert len({id(w) for w in model.weights}) == len(model.weights)


def test_masked_positions_only_gives_the_same_outputs_and_gradients():
  """outputs="positions": the last layer computed at [CLS] + masked positions only: same
  logits, losses, gradients."""
  full = modeling.build_pretraining_model(TINY_BERT, max_predictions_per_seq=3)
  fast = modeling.build_pretraining_model(TINY_BERT, max_predictions_per_seq=3,
                                          outputs="positions")
  assert [w.name for w in fast.weights] == [w.name for w in full.weights]
  fast.set_weights(full.get_weights())
  features = dict(bert_inputs(), masked_lm_positions=np.array([[1, 2, 2], [0, 7, 3], [5, 3, 1]],
                                                          np.int32))
  labels = dict(masked_lm_ids=np.array([[3, 4, 5], [6, 7, 8], [9, 10, 11]], np.int32),
                masked_lm_weights=np.array([[1, 1, 0], [1, 1, 1], [1, 0, 0]], np.float32),
                next_sentence_labels=np.array([[0], [1], [1]], np.int32))
  results = []
  for model in (full, fast):
    with tf.GradientTape() as tape:
      out = model(features)
      loss = pretraining_loss(out, labels)["total_loss"]
    results.append((out, loss, tape.gradient(loss, model.trainable_variables)))
  (out_full, loss_full, grads_full), (out_fast, loss_fast, grads_fast) = results
  assert out_fast["sequence_output"].shape == (3, 3, 32)  # the masked positions only
  np.testing.assert_allclose(
      out_fast["sequence_output"],
      tf.gather(out_full["sequence_output"], features["masked_lm_positions"], batch_dims=1),
      atol=1e-5)
  for key in ("masked_lm_logits", "next_sentence_logits", "pooled_output"):
    np.testing.assert_allclose(out_fast[key], out_full[key], atol=1e-5)
  np.testing.assert_allclose(loss_fast, loss_full, rtol=1e-6)
  for g_fast, g_full in zip(grads_fast, grads_full):
    np.testing.assert_allclose(tf.convert_to_tensor(g_fast), tf.convert_to_tensor(g_full),
                               atol=1e-6)
  with pytest.raises(ValueError, match="the masked-LM head reads the sequence output"):
    modeling.build_pretraining_model(TINY_BERT, outputs="pooled")
