"""Activations: the GELUs' meanings and HF names, their XLA kernels' values and gradients."""

import math

import numpy as np
import pytest
import tensorflow as tf

from modeling import activations


def test_gelu_meanings():
  x = tf.constant([-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0])
  exact = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.numpy()])
  tanh = np.array([0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)))
                   for v in x.numpy()])
  assert np.abs(activations.get("gelu_exact")(x).numpy() - exact).max() < 1e-6
  for name in ("gelu", "gelu_tanh", "gelu_new"):
    assert np.abs(activations.get(name)(x).numpy() - tanh).max() < 1e-6
  assert np.abs(exact - tanh).max() > 1e-4  # the two really differ
  assert activations.from_huggingface_name("gelu") == "gelu_exact"
  assert activations.from_huggingface_name("gelu_new") == "gelu_tanh"
  assert activations.from_huggingface_name("silu") == "swish"
  np.testing.assert_allclose(activations.get("swish")(x).numpy(),
                             x.numpy() / (1 + np.exp(-x.numpy())), rtol=1e-6)
  with pytest.raises(ValueError, match="unsupported HuggingFace hidden_act 'foo'"):
    activations.from_huggingface_name("foo")


def _gelu_tanh_reference(x):
  """The tanh GELU and its analytic derivative, in float64 numpy."""
  k, c = math.sqrt(2 / math.pi), 0.044715
  t = np.tanh(k * (x + c * x ** 3))
  return 0.5 * x * (1 + t), 0.5 * (1 + t) + 0.5 * x * (1 - t ** 2) * k * (1 + 3 * c * x ** 2)


@pytest.mark.parametrize("dtype,tolerance", [(tf.float64, 1e-8), (tf.float32, 1e-5),
                                             (tf.bfloat16, 2e-2)])
def test_compiled_gelus_values_and_gradients(dtype, tolerance):
  """The XLA-kernel GELUs used in training against the formulas and their derivatives
  (XLA's float64 exp is good to ~6e-9 here, hence not 1e-12)."""
  x = np.linspace(-6.0, 6.0, 241)
  cdf = 0.5 * (1 + np.array([math.erf(v / math.sqrt(2)) for v in x]))
  pdf = np.exp(-0.5 * x ** 2) / math.sqrt(2 * math.pi)
  expected = {
      activations.gelu_tanh_compiled: _gelu_tanh_reference(x),
      activations.gelu_exact_compiled: (x * cdf, cdf + x * pdf),
  }
  for function, (value, derivative) in expected.items():
    xt = tf.constant(x, dtype)
    with tf.GradientTape() as tape:
      tape.watch(xt)
      y = function(xt)
    grad = tape.gradient(y, xt)
    assert y.dtype == dtype and grad.dtype == dtype
    np.testing.assert_allclose(tf.cast(y, tf.float64).numpy(), value, atol=tolerance * 6,
                               rtol=tolerance)
    np.testing.assert_allclose(tf.cast(grad, tf.float64).numpy(), derivative, atol=tolerance)
  for name in ("gelu", "gelu_tanh", "gelu_new"):
    assert activations.get(name, compiled=True) is activations.gelu_tanh_compiled
  assert activations.get("gelu_exact", compiled=True) is activations.gelu_exact_compiled
  assert activations.get("relu", compiled=True) is tf.nn.relu
  assert activations.get("linear", compiled=True) is None
