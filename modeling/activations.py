"""The `hidden_act` functions, and the two meanings of "gelu".

Google's `modeling.py` computes "gelu" with the tanh approximation; PyTorch and
HuggingFace compute "gelu" exactly (erf) and call the tanh one "gelu_new".
Configs in Google's format use Google's meaning; `from_huggingface_name`
translates HF names. "gelu_tanh" and "gelu_exact" are unambiguous everywhere.
"""

import math

import tensorflow as tf


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_GELU_CUBIC = 0.044715


@tf.custom_gradient
def gelu_tanh(x):
  """GELU, tanh approximation: Google's `modeling.gelu`, with a hand-written gradient.

  0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3). The gradient reuses
  the forward tanh instead of differentiating `pow` op by op (about a third
  less time for forward + backward on CPU).
  """
  x_squared = tf.square(x)
  t = tf.tanh(x * (_SQRT_2_OVER_PI + (_SQRT_2_OVER_PI * _GELU_CUBIC) * x_squared))

  def grad(dy):
    du_dx = _SQRT_2_OVER_PI + (3.0 * _SQRT_2_OVER_PI * _GELU_CUBIC) * x_squared
    return dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - tf.square(t)) * du_dx)
  return 0.5 * x * (1.0 + t), grad


def gelu_exact(x):
  """GELU with the exact Gaussian CDF (erf), as PyTorch's default `gelu`."""
  return 0.5 * x * (1.0 + tf.math.erf(x / tf.cast(math.sqrt(2.0), x.dtype)))


def swish(x):
  return x * tf.sigmoid(x)


_FUNCTIONS = {
    "gelu": gelu_tanh,  # Google's meaning.
    "gelu_tanh": gelu_tanh,
    "gelu_new": gelu_tanh,  # HF's name for the tanh form; unambiguous.
    "gelu_exact": gelu_exact,
    "relu": tf.nn.relu,
    "tanh": tf.tanh,
    "swish": swish,
    "linear": None,
}
NAMES = frozenset(_FUNCTIONS)

# HuggingFace `hidden_act` -> our name (same function).
_FROM_HUGGINGFACE = {
    "gelu": "gelu_exact",
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "relu": "relu",
    "tanh": "tanh",
    "silu": "swish",
    "swish": "swish",
    "linear": "linear",
}


def get(name):
  """The function for a `hidden_act` name (Google's convention); None for "linear"."""
  if name not in _FUNCTIONS:
    raise ValueError(f"unsupported hidden_act {name!r}; known: {sorted(NAMES)}")
  return _FUNCTIONS[name]


def from_huggingface_name(name):
  """Translates an HF `hidden_act` to ours: HF "gelu" (erf) -> "gelu_exact"."""
  if name not in _FROM_HUGGINGFACE:
    raise ValueError(f"unsupported HuggingFace hidden_act {name!r}; "
                     f"known: {sorted(_FROM_HUGGINGFACE)}")
  return _FROM_HUGGINGFACE[name]
