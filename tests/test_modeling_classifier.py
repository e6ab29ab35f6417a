"""build_classifier: run_classifier's output layer on the pooled output."""

import numpy as np
import pytest
import tensorflow as tf

import modeling
from tests.helpers import TINY_BERT, bert_inputs


@pytest.mark.parametrize("num_labels", [3, 1])
def test_classifier(num_labels):
  model = modeling.build_classifier(TINY_BERT, num_labels)
  head = model.get_layer("classifier")
  feats = bert_inputs()
  logits = model(feats)
  assert logits.shape == (3, num_labels) and logits.dtype == tf.float32
  pooled = model.get_layer("bert")(feats)["pooled_output"].numpy()
  expected = pooled @ head.output_weights.numpy().T + head.output_bias.numpy()
  np.testing.assert_allclose(logits, expected, atol=1e-5)
  assert head.output_weights.shape == (num_labels, 32)
  with pytest.raises(ValueError, match="num_labels must be >= 1"):
    modeling.build_classifier(TINY_BERT, 0)


def test_last_layer_at_cls_only_gives_the_same_logits_and_gradients():
  """The classifier's own encoder runs its last layer at [CLS] only; with a full encoder
  (same weights) the logits and every gradient are the same."""
  config = TINY_BERT.replace(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
  fast = modeling.build_classifier(config, 2, dropout_rate=0.0)
  full = modeling.build_classifier(config, 2, dropout_rate=0.0,
                                   encoder=modeling.build_encoder(config))
  assert [w.name for w in fast.weights] == [w.name for w in full.weights]
  assert set(fast.get_layer("bert").output) == {"pooled_output"}
  fast.set_weights(full.get_weights())
  features, labels = bert_inputs(), np.array([0, 1, 1])
  results = []
  for model in (full, fast):
    with tf.GradientTape() as tape:
      logits = model(features, training=True)
      loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
    results.append((logits, tape.gradient(loss, model.trainable_variables)))
  (logits_full, grads_full), (logits_fast, grads_fast) = results
  np.testing.assert_allclose(logits_fast, logits_full, atol=1e-5)
  for g_fast, g_full in zip(grads_fast, grads_full):
    np.testing.assert_allclose(tf.convert_to_tensor(g_fast), tf.convert_to_tensor(g_full),
                               atol=1e-6)
  with pytest.raises(ValueError, match="choose one"):
    modeling.build_encoder(TINY_BERT, selected_outputs=True, pooled_output_only=True)
