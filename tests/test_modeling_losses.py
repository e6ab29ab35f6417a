"""Google's masked-LM and next-sentence losses; our cross-entropy against TensorFlow's."""

import numpy as np
import pytest
import tensorflow as tf

import modeling
from modeling import losses


def test_losses_as_google():
  logits = tf.constant(np.random.default_rng(1).normal(size=(2, 3, 5)), tf.float32)
  ids = np.array([[1, 2, 0], [4, 0, 0]], np.int32)
  weights = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]], np.float32)
  loss, per_slot, predictions = modeling.masked_lm_loss(logits, ids, weights)
  log_probs = logits.numpy() - np.log(np.exp(logits.numpy()).sum(-1, keepdims=True))
  expected = -np.take_along_axis(log_probs, ids[..., None], -1)[..., 0]
  np.testing.assert_allclose(per_slot, expected, rtol=1e-6)
  np.testing.assert_array_equal(predictions, logits.numpy().argmax(-1))
  np.testing.assert_allclose(loss, (expected * weights).sum() / (weights.sum() + 1e-5),
                             rtol=1e-6)
  nsp_logits = tf.constant([[2.0, -1.0], [0.5, 0.25]])
  nsp, per_example, nsp_predictions = modeling.next_sentence_loss(nsp_logits,
                                                                  np.array([[0], [1]]))
  lp = nsp_logits.numpy() - np.log(np.exp(nsp_logits.numpy()).sum(-1, keepdims=True))
  np.testing.assert_allclose(per_example, [-lp[0, 0], -lp[1, 1]], rtol=1e-6)
  np.testing.assert_array_equal(nsp_predictions, [0, 0])
  np.testing.assert_allclose(nsp, per_example.numpy().mean(), rtol=1e-6)


@pytest.mark.parametrize("jit_compile", [False, True])
def test_cross_entropy_matches_tensorflows_values_and_gradients(jit_compile):
  rng = np.random.default_rng(2)
  logits = rng.normal(scale=4.0, size=(64, 1000)).astype(np.float32)
  labels = rng.integers(0, 1000, 64).astype(np.int32)
  logits[0, labels[0]] = -200.0  # p(label) ~ e^-200 underflows: -log p must not be inf
  logits[1, [3, 7]] = 50.0  # a tie for the maximum: the argmax is the first
  upstream = rng.normal(size=64).astype(np.float32)

  def loss_and_grad(fn, x):
    with tf.GradientTape() as tape:
      tape.watch(x)
      per_row, predictions = fn(x)
      total = tf.reduce_sum(per_row * upstream)
    return per_row, tape.gradient(total, x), predictions
  ours = tf.function(lambda x: loss_and_grad(
      lambda t: losses.sparse_softmax_cross_entropy(t, tf.constant(labels)), x),
      jit_compile=jit_compile)(tf.constant(logits))
  reference = loss_and_grad(lambda t: (tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels, t), tf.argmax(t, axis=-1, output_type=tf.int32)), tf.constant(logits))
  assert float(ours[0][0]) == pytest.approx(float(reference[0][0]), rel=1e-6)
  assert float(ours[0][0]) > 190.0
  np.testing.assert_allclose(ours[0], reference[0], rtol=2e-6, atol=1e-6)
  np.testing.assert_allclose(ours[1], reference[1], rtol=1e-5, atol=1e-7)
  np.testing.assert_array_equal(ours[2], reference[2])
  assert ours[2][1] == 3
