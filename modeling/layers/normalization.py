"""LayerNorm and weight initialization as Google's BERT uses them."""

import tensorflow as tf
import tf_keras as keras

# Google's `layer_norm` (tf.contrib) uses this epsilon, over the last axis.
EPSILON = 1e-12


def layer_norm(name):
  """A float32 LayerNormalization over the last axis, epsilon 1e-12.

  It always computes in float32 (stable under mixed precision); callers cast
  the result back to their compute dtype. With this epsilon Keras uses
  `tf.nn.moments` + `tf.nn.batch_normalization`, the same ops as Google.
  """
  return keras.layers.LayerNormalization(axis=-1, epsilon=EPSILON, dtype="float32", name=name)


def truncated_normal(stddev):
  """Google's `create_initializer`; a new instance per weight (instances repeat values)."""
  return keras.initializers.TruncatedNormal(stddev=stddev)


def build_sublayer(layer, input_shape):
  """Builds `layer` under its own name scope so its variables get readable names."""
  with tf.name_scope(layer.name):
    layer.build(input_shape)
