"""Each distillation loss against a numpy reference of its paper's formula, padding left out,
and the projections H_S W."""

import numpy as np
import pytest
import tensorflow as tf

from distillation import losses
from distillation.model import Projections

B, S, N, H = 2, 5, 3, 4
MASK = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], np.int32)  # example 0 has 2 padded tokens


def _random(*shape, seed):
  return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def _softmax(x):
  e = np.exp(x - x.max(-1, keepdims=True))
  return e / e.sum(-1, keepdims=True)


def _with_padding(x, value):
  """x with `value` at every padded position (query or key): the losses must not see it."""
  x = x.copy()
  for b, n in enumerate(MASK.sum(1)):
    if x.ndim == 3:
      x[b, n:] = value
    else:
      x[b, :, n:, :] = value
      x[b, :, :, n:] = value
  return x


def test_hidden_mse_is_the_mean_over_real_positions():
  student, teacher = _random(B, S, H, seed=1), _random(B, S, H, seed=2)
  # The paper's MSE over the elements of the real tokens' vectors only.
  real = MASK.astype(bool)
  expected = np.mean((student[real] - teacher[real]) ** 2)
  assert losses.hidden_mse(student, teacher, MASK).numpy() == pytest.approx(expected, rel=1e-6)
  padded = losses.hidden_mse(_with_padding(student, 1e3), _with_padding(teacher, -1e3), MASK)
  assert padded.numpy() == pytest.approx(expected, rel=1e-6)
  assert losses.hidden_mse(teacher, teacher, MASK).numpy() == 0.0


def test_projected_hidden_mse_is_mse_of_hs_w_and_ht():
  """MSE(H_S W_h, H_T) with a student narrower than the teacher, per layer and shared."""
  states = [_random(B, S, 3, seed=i) for i in range(3)]  # embeddings + 2 layers, width 3
  teacher = _random(B, S, H, seed=9)
  real = MASK.astype(bool)
  per_layer = Projections(3, 3, H, "per_layer")
  projected = per_layer(states)
  kernels = [w.numpy() for w in per_layer.kernels.values()]
  assert len(kernels) == 3 and not np.allclose(kernels[0], kernels[1])
  for x, w, out in zip(states, kernels, projected):
    assert out.shape == (B, S, H)
    expected = np.mean(((x @ w)[real] - teacher[real]) ** 2)
    assert losses.hidden_mse(out, teacher, MASK).numpy() == pytest.approx(expected, rel=1e-5)
  shared = Projections(3, 3, H, "shared")
  projected = shared(states)
  (w,) = [v.numpy() for v in shared.kernels.values()]
  for x, out in zip(states, projected):
    np.testing.assert_allclose(out, x @ w, rtol=1e-5, atol=1e-6)


def test_projections_start_as_the_identity_at_equal_widths():
  states = [_random(B, S, H, seed=i) for i in range(2)]
  for x, out in zip(states, Projections(2, H, H)(states)):
    np.testing.assert_array_equal(out, x)


def test_attention_score_mse_averages_heads_and_real_pairs():
  student, teacher = _random(B, N, S, S, seed=3), _random(B, N, S, S, seed=4)
  # The paper: (1/h) sum over heads of MSE(A_S, A_T) over the l x l real pairs of each example.
  diffs = np.concatenate([(student[b, :, :n, :n] - teacher[b, :, :n, :n]).ravel()
                          for b, n in enumerate(MASK.sum(1))])
  expected = np.mean(diffs ** 2)
  got = losses.attention_score_mse(student, teacher, MASK).numpy()
  assert got == pytest.approx(expected, rel=1e-6)
  # Pre-mask scores at padded keys (or the mask's -10000) change nothing.
  got = losses.attention_score_mse(_with_padding(student, -1e4), _with_padding(teacher, 5.0),
                                   MASK).numpy()
  assert got == pytest.approx(expected, rel=1e-6)


def test_the_mses_with_padding_included_as_the_official_code():
  """padding=INCLUDED: the official TinyBERT's MSEs over the padded sequences. Its attention
  scores carry the mask's -10000 at padded keys, which it sets to 0 on both sides (scores
  <= -100); the mean is over every (query, key) pair of every head, padded queries too."""
  student, teacher = _random(B, S, H, seed=12), _random(B, S, H, seed=13)
  expected = np.mean((student - teacher) ** 2)
  got = losses.hidden_mse(student, teacher, MASK, losses.INCLUDED).numpy()
  assert got == pytest.approx(expected, rel=1e-6)
  assert got != pytest.approx(losses.hidden_mse(student, teacher, MASK).numpy(), rel=1e-3)

  scores_s, scores_t = _random(B, N, S, S, seed=14), _random(B, N, S, S, seed=15)
  keys = MASK.astype(bool)[:, None, None, :]  # [B, 1, 1, S]
  theirs_s, theirs_t = (np.where(keys, x, x - 10000.0) for x in (scores_s, scores_t))
  theirs_s, theirs_t = (np.where(x <= -100.0, 0.0, x) for x in (theirs_s, theirs_t))
  expected = np.mean((theirs_s - theirs_t) ** 2)
  got = losses.attention_score_mse(scores_s, scores_t, MASK, losses.INCLUDED).numpy()
  assert got == pytest.approx(expected, rel=1e-6)
  # Padded queries' rows count; padded keys' columns do not.
  rows, columns = scores_s.copy(), scores_s.copy()
  rows[0, :, 4, :3] += 1.0
  columns[0, :, :, 4] += 1.0
  assert losses.attention_score_mse(rows, scores_t, MASK, losses.INCLUDED).numpy() > got
  assert losses.attention_score_mse(columns, scores_t, MASK,
                                    losses.INCLUDED).numpy() == pytest.approx(got, rel=1e-6)


@pytest.mark.parametrize("temperature", [1.0, 2.5])
def test_soft_cross_entropy_at_temperature(temperature):
  student, teacher = _random(4, 3, seed=5), _random(4, 3, seed=6)
  p_teacher = _softmax(teacher / temperature)
  expected = np.mean(-np.sum(p_teacher * np.log(_softmax(student / temperature)), axis=-1))
  got = losses.soft_cross_entropy(student, teacher, temperature).numpy()
  assert got == pytest.approx(expected, rel=1e-5)
  # At its minimum (student = teacher) it is the teacher's entropy, not 0.
  entropy = np.mean(-np.sum(p_teacher * np.log(p_teacher), axis=-1))
  assert losses.soft_cross_entropy(teacher, teacher, temperature).numpy() == pytest.approx(
      entropy, rel=1e-5)


def test_attention_kl_over_real_queries_and_keys():
  student, teacher = _random(B, N, S, S, seed=7), _random(B, N, S, S, seed=8)
  # MiniLM: mean over heads and real queries t of KL(A_T[t] || A_S[t]), A over real keys.
  kls = []
  for b, n in enumerate(MASK.sum(1)):
    p_t, p_s = _softmax(teacher[b, :, :n, :n]), _softmax(student[b, :, :n, :n])  # [N, n, n]
    kls.append(np.sum(p_t * np.log(p_t / p_s), axis=-1).ravel())
  expected = np.mean(np.concatenate(kls))
  assert losses.attention_kl(student, teacher, MASK).numpy() == pytest.approx(expected, rel=1e-5)
  got = losses.attention_kl(_with_padding(student, 30.0), _with_padding(teacher, -30.0), MASK)
  assert got.numpy() == pytest.approx(expected, rel=1e-5)
  assert abs(losses.attention_kl(teacher, teacher, MASK).numpy()) < 1e-6


def test_losses_have_gradients_only_at_real_positions():
  student = tf.Variable(_random(B, N, S, S, seed=10))
  teacher = _random(B, N, S, S, seed=11)
  for loss in (losses.attention_score_mse, losses.attention_kl):
    with tf.GradientTape() as tape:
      value = loss(student, teacher, MASK)
    grad = tape.gradient(value, student).numpy()
    assert np.all(np.isfinite(grad))
    assert np.all(grad[0, :, 3:, :] == 0) and np.all(grad[0, :, :, 3:] == 0)
    assert np.abs(grad[1]).sum() > 0
