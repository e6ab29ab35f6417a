"""LayerNorm and weight initialization as Google's BERT uses them."""

import tensorflow as tf
import tf_keras as keras

from modeling.kernels import current_kernels

# Google's `layer_norm` (tf.contrib) uses this epsilon, over the last axis.
EPSILON = 1e-12


@tf.custom_gradient
def _normalize(x, gamma, beta):
  """(x - mean) / sqrt(var + EPSILON) * gamma + beta over the last axis, float32.

  The gradient is written out (one pass per reduction) instead of being
  differentiated op by op through `tf.nn.moments`, which takes longer.
  """
  mean, variance = tf.nn.moments(x, axes=[-1], keepdims=True)
  inv_std = tf.math.rsqrt(variance + EPSILON)
  normalized = (x - mean) * inv_std

  def grad(dy):
    rows = tf.reshape(dy, [-1, tf.shape(dy)[-1]])  # [N, H]
    d_normalized = dy * gamma
    dx = inv_std * (d_normalized - tf.reduce_mean(d_normalized, axis=-1, keepdims=True)
                    - normalized * tf.reduce_mean(d_normalized * normalized, axis=-1,
                                                  keepdims=True))
    # Plain column sums, not dense._sum_rows: tried with it here and for the
    # position embeddings, XLA fused the LayerNorm backward of all layers into
    # one slow loop fusion.
    d_gamma = tf.reduce_sum(rows * tf.reshape(normalized, tf.shape(rows)), axis=0)
    return dx, d_gamma, tf.reduce_sum(rows, axis=0)
  return normalized * gamma + beta, grad


class LayerNorm(keras.layers.Layer):
  """Google's `layer_norm`: over the last axis, epsilon 1e-12, weights `gamma` and `beta`.

  It always computes in float32 (stable under mixed precision); callers cast
  the result back to their compute dtype.
  """

  def __init__(self, **kwargs):
    kwargs["dtype"] = "float32"
    super().__init__(**kwargs)

  def build(self, input_shape):
    size = input_shape[-1]
    self.gamma = self.add_weight("gamma", shape=[size], initializer="ones")
    self.beta = self.add_weight("beta", shape=[size], initializer="zeros")
    super().build(input_shape)

  def call(self, x):
    return _normalize(x, self.gamma, self.beta)


def layer_norm(name):
  """A float32 LayerNorm layer called `name`, as Google's: our `LayerNorm` for the
  "fused" kernels, Keras' `LayerNormalization` for "keras" (same variables;
  `modeling.kernels`)."""
  if current_kernels() == "fused":
    return LayerNorm(name=name)
  return keras.layers.LayerNormalization(epsilon=EPSILON, name=name, dtype="float32")


def truncated_normal(stddev):
  """Google's `create_initializer`; a new instance per weight (instances repeat values)."""
  return keras.initializers.TruncatedNormal(stddev=stddev)


def build_sublayer(layer, input_shape):
  """Builds `layer` under its own name scope so its variables get readable names."""
  with tf.name_scope(layer.name):
    layer.build(input_shape)
