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


def _gelu_tanh_terms(x):
  """x^2 and tanh(u), u = sqrt(2/pi) (x + 0.044715 x^3): what value and derivative share."""
  x_squared = tf.square(x)
  return x_squared, tf.tanh(x * (_SQRT_2_OVER_PI + (_SQRT_2_OVER_PI * _GELU_CUBIC) * x_squared))


def _gelu_tanh_derivative(x, x_squared, t):
  du_dx = _SQRT_2_OVER_PI + (3.0 * _SQRT_2_OVER_PI * _GELU_CUBIC) * x_squared
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - tf.square(t)) * du_dx


def gelu_tanh(x):
  """GELU, tanh approximation: Google's `modeling.gelu`,
  0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3).

  TensorFlow's own formula: on CPU its graph optimizer fuses it into the
  matmul and bias before it (see `MatmulDense`). The fused kernels train
  with the compiled kernel below instead.
  """
  return tf.nn.gelu(x, approximate=True)


def gelu_exact(x):
  """GELU with the exact Gaussian CDF (erf), as PyTorch's default `gelu`; fused like
  `gelu_tanh`."""
  return tf.nn.gelu(x, approximate=False)


def _gelu_exact_derivative(x):
  """Phi(x) + x phi(x)."""
  return (0.5 * (1.0 + tf.math.erf(x * (1.0 / math.sqrt(2.0))))
          + x * tf.exp(-0.5 * tf.square(x)) * (1.0 / math.sqrt(2.0 * math.pi)))


def _compiled(value, derivative):
  """`value` with the gradient dy * derivative(x), forward and backward each one
  XLA-compiled kernel (float32 inside for 16-bit inputs).

  TensorFlow runs an element-wise formula op by op, a pass over memory each;
  XLA fuses it into one pass, much faster on CPU over a layer's
  [tokens, intermediate] activations. The kernels are compiled per input
  shape, so layers use them only in training (fixed batch shapes); inference
  and exported SavedModels keep plain ops.
  """
  def compute_dtype(x):
    return tf.float64 if x.dtype == tf.float64 else tf.float32

  @tf.function(jit_compile=True)
  def forward(x):
    return tf.cast(value(tf.cast(x, compute_dtype(x))), x.dtype)

  @tf.function(jit_compile=True)
  def backward(x, dy):
    return tf.cast(tf.cast(dy, compute_dtype(x)) * derivative(tf.cast(x, compute_dtype(x))),
                   dy.dtype)

  @tf.custom_gradient
  def function(x):
    return forward(x), lambda dy: backward(x, dy)
  return function


gelu_tanh_compiled = _compiled(lambda x: 0.5 * x * (1.0 + _gelu_tanh_terms(x)[1]),
                               lambda x: _gelu_tanh_derivative(x, *_gelu_tanh_terms(x)))
gelu_exact_compiled = _compiled(gelu_exact, _gelu_exact_derivative)


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

# The compiled forms, where there is one (the fused kernels train with them).
_COMPILED_FUNCTIONS = {
    "gelu": gelu_tanh_compiled,
    "gelu_tanh": gelu_tanh_compiled,
    "gelu_new": gelu_tanh_compiled,
    "gelu_exact": gelu_exact_compiled,
}

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


# Our name -> the HF `hidden_act` written for it: Google's "gelu" (tanh) is HF's "gelu_new".
_TO_HUGGINGFACE = {
    "gelu": "gelu_new",
    "gelu_tanh": "gelu_new",
    "gelu_new": "gelu_new",
    "gelu_exact": "gelu",
    "relu": "relu",
    "tanh": "tanh",
    "swish": "silu",
    "linear": "linear",
}


def get(name, compiled=False):
  """The function for a `hidden_act` name (Google's convention); None for "linear".

  compiled=True: the same function, as XLA-compiled kernels where that is
  faster (the GELUs; see `_compiled`): what the "fused" kernels train with
  (`modeling.kernels`; "keras" trains with TensorFlow's plain ops).
  """
  if name not in _FUNCTIONS:
    raise ValueError(f"unsupported hidden_act {name!r}; known: {sorted(NAMES)}")
  if compiled:
    return _COMPILED_FUNCTIONS.get(name, _FUNCTIONS[name])
  return _FUNCTIONS[name]


def from_huggingface_name(name):
  """Translates an HF `hidden_act` to ours: HF "gelu" (erf) -> "gelu_exact"."""
  if name not in _FROM_HUGGINGFACE:
    raise ValueError(f"unsupported HuggingFace hidden_act {name!r}; "
                     f"known: {sorted(_FROM_HUGGINGFACE)}")
  return _FROM_HUGGINGFACE[name]


def to_huggingface_name(name):
  """Translates our `hidden_act` to HF's: "gelu" (Google's, tanh) -> "gelu_new"."""
  if name not in _TO_HUGGINGFACE:
    raise ValueError(f"unsupported hidden_act {name!r}; known: {sorted(NAMES)}")
  return _TO_HUGGINGFACE[name]
