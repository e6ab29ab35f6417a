"""SquadTask: Google's run_squad loss."""

import numpy as np
import pytest
import tensorflow as tf

import modeling
from modeling.kernels import FAMILIES
from squad.task import span_loss


def test_loss_is_the_mean_of_start_and_end_cross_entropies_on_both_kernels():
  rng = np.random.default_rng(0)
  outputs = {"start_logits": tf.constant(rng.normal(size=(4, 9)), tf.float32),
             "end_logits": tf.constant(rng.normal(size=(4, 9)), tf.float32)}
  starts, ends = np.array([0, 3, 8, 2]), np.array([0, 5, 8, 2])

  def cross_entropy(logits, labels):
    logits = logits.numpy().astype(np.float64)
    log_softmax = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    return -log_softmax[np.arange(len(labels)), labels].mean()

  expected = (cross_entropy(outputs["start_logits"], starts) +
              cross_entropy(outputs["end_logits"], ends)) / 2
  for family in FAMILIES:
    with modeling.kernels_scope(family):
      assert span_loss(outputs, starts, ends).numpy() == pytest.approx(expected, rel=1e-6)
