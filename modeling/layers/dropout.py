"""Dropout with a mask drawn 16 bits per element (half the random numbers of Keras')."""

import tensorflow as tf
import tf_keras as keras

from modeling.kernels import current_kernels

# A draw of 16 random bits u is dropped when u < round(rate * 2**16): the drop
# probability is the rate to within 2**-17 (0.1 -> 0.100006).
_BITS = 16


@tf.function(jit_compile=True)
def _keep_mask(shape, seed, rate):
  """bool [shape]: True where an element is kept; one 32-bit draw per two elements.

  An XLA-compiled kernel (per shape and rate), so that it can use ThreeFry,
  which XLA expands into cheaper code than Philox, in and out of a
  jit-compiled step alike (TensorFlow's own kernels have no ThreeFry).
  """
  last = shape[-1]
  words = tf.random.stateless_uniform(tf.concat([shape[:-1], [(last + 1) // 2]], 0), seed,
                                      minval=None, maxval=None, dtype=tf.uint32,
                                      alg="threefry")
  halves = tf.bitcast(words, tf.uint16)  # [..., ceil(last / 2), 2]
  halves = tf.reshape(halves, tf.concat([shape[:-1], [-1]], 0))[..., :last]  # [..., last]
  return halves >= round(rate * 2**_BITS)


def dropout(x, rate):
  """Inverted dropout: each element is zeroed with probability `rate`, the rest scaled
  by 1 / (1 - rate). The gradient applies the same mask and scale (one pass)."""
  # A fresh seed per call from the stateful generator, so each step and each
  # replica draws a new mask, as with Keras' Dropout.
  seed = tf.random.uniform([2], minval=-2**31, maxval=2**31 - 1, dtype=tf.int32)
  keep = _keep_mask(tf.shape(x), seed, rate)
  scale = tf.cast(1.0 / (1.0 - rate), x.dtype)
  zero = tf.zeros([], x.dtype)

  @tf.custom_gradient
  def apply(x):
    def grad(dy):
      return tf.where(keep, dy * scale, zero)
    return tf.where(keep, x * scale, zero), grad
  return apply(x)


class Dropout(keras.layers.Layer):
  """Keras' `Dropout(rate)` (identity unless training), with the cheaper mask above.

  `training` may be a Python bool or a boolean tensor, as for Keras' Dropout.
  """

  def __init__(self, rate, **kwargs):
    super().__init__(**kwargs)
    if not 0.0 <= rate < 1.0:
      raise ValueError(f"dropout rate must be in [0, 1), got {rate}")
    self.rate = rate

  def call(self, inputs, training=None):
    if training is None:
      training = keras.backend.learning_phase()
    if self.rate == 0.0:
      return inputs
    static = tf.get_static_value(training)
    if static is not None:
      return dropout(inputs, self.rate) if static else inputs
    return tf.cond(tf.cast(training, tf.bool), lambda: dropout(inputs, self.rate),
                   lambda: tf.identity(inputs))

  def get_config(self):
    config = super().get_config()
    config.update(rate=self.rate)
    return config


def dropout_layer(rate, **kwargs):
  """A dropout layer: our `Dropout` for the "fused" kernels, Keras' for "keras"
  (`modeling.kernels`)."""
  layer_class = Dropout if current_kernels() == "fused" else keras.layers.Dropout
  return layer_class(rate, **kwargs)
