"""Token packing: the encoder's hidden states as the rows of the batch's tokens only.

A batch cut to its longest row is still mostly padding when its lengths vary
(sentence pairs). Packed, every per-token layer (the projections, the
feed-forward network, the LayerNorms, dropout) runs on the rows [1, T, hidden]
of the batch's T tokens instead of [batch, seq, hidden]. Only the attention
core needs the padded layout, which `unpack` restores with zeros at padding:
the padding mask gives those keys exactly zero weight (exp(-10000) is 0 in
float32), so the result is the unpacked model's. The packed rows keep a batch
axis of 1 so that the layers, built for [batch, seq, hidden], take them as they
are (Keras' LayerNormalization fixes its axis by rank when built).
"""

import tensorflow as tf
import tf_keras as keras
from tf_keras.src.utils import control_flow_util

# In training, T is rounded up to a multiple of this with padding positions:
# the compiled GELU and dropout kernels compile once per shape (~0.4 s on a
# CPU), and a new T nearly every step would cost more than packing saves.
TRAINING_MULTIPLE = 128


def packed_positions(input_mask):
  """bool [B, S]: what to pack: the tokens (input_mask 1), every row's first position (the
  pooler's input), and all of a row without tokens, so that the packed model computes what
  the unpacked one does there too (its every key is masked)."""
  mask = tf.cast(input_mask, tf.bool)
  first = tf.equal(tf.range(tf.shape(mask)[1]), 0)[tf.newaxis, :]  # [1, S]
  empty = tf.logical_not(tf.reduce_any(mask, axis=1, keepdims=True))  # [B, 1]
  return mask | first | empty


def token_indices(positions, multiple=1):
  """int32 [T]: the flat indices b * S + s of `positions` (bool [B, S]), ascending, plus
  the first other ones that make T a multiple of `multiple` (or B * S)."""
  flat = tf.cast(tf.reshape(positions, [-1]), tf.int32)  # [B*S]
  count = tf.minimum((tf.reduce_sum(flat) + multiple - 1) // multiple * multiple, tf.size(flat))
  # The chosen positions, then the others, each in order: the first `count`.
  order = tf.argsort(1 - flat, stable=True)[:count]
  return tf.sort(tf.cast(order, tf.int32))


def first_rows(indices, input_mask):
  """int32 [B, 1]: the packed row of each row's first position (always packed)."""
  starts = tf.range(tf.shape(input_mask)[0]) * tf.shape(input_mask)[1]  # [B]
  return tf.searchsorted(indices, starts)[:, tf.newaxis]


def pack(x, indices):
  """[B, S, H] -> [1, T, H]: the rows at `indices` (`token_indices`)."""
  rows = tf.reshape(x, [-1, x.shape[-1]])  # [B*S, H]
  return tf.gather(rows, indices)[tf.newaxis]


def unpack(rows, indices, input_mask):
  """[1, T, C] -> [B, S, C] (input_mask's shape): `pack` undone, zeros where nothing was
  packed (padding: masked keys). A gather from the rows and one row of zeros, and `pack`
  as its gradient: TensorFlow's scatter into [B*S, C] (and a gather's own gradient, a
  segment sum) cost several times as much on a CPU."""
  batch, seq = tf.shape(input_mask)[0], tf.shape(input_mask)[1]
  count = tf.shape(indices)[0]
  # The packed row of each flat position b * S + s, or T (the zero row) where none.
  sources = tf.tensor_scatter_nd_update(tf.fill([batch * seq], count), indices[:, tf.newaxis],
                                        tf.range(count))  # [B*S]

  @tf.custom_gradient
  def unpack_rows(rows):
    padded = tf.concat([rows[0], tf.zeros([1, rows.shape[-1]], rows.dtype)], 0)  # [T+1, C]
    out = tf.reshape(tf.gather(padded, sources), [batch, seq, rows.shape[-1]])
    return out, lambda grad: pack(grad, indices)
  return unpack_rows(rows)


class PackTokens(keras.layers.Layer):
  """Packs the embeddings once, for every layer of the encoder.

  Call with `(x, input_mask)`, x [B, S, H]. Returns the packed rows [1, T, H]
  of the `packed_positions`, their indices [T] (`token_indices`) and the packed
  rows of the rows' first positions [B, 1]. When training is known to be on
  (a Python bool: the compiled kernels' case, see `TransformerLayer`), T is
  rounded up to TRAINING_MULTIPLE. Inside an XLA-compiled function every
  position is packed (T = B * S, static): XLA takes a size computed from the
  mask as a constant and would compile the function again for every batch.
  """

  def call(self, inputs, training=None):
    x, input_mask = inputs
    if control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph()):
      indices = tf.range(tf.size(input_mask))  # [B*S]
      return pack(x, indices), indices, first_rows(indices, input_mask)
    if training is None:
      training = keras.backend.learning_phase()
    multiple = TRAINING_MULTIPLE if tf.get_static_value(training) else 1
    indices = token_indices(packed_positions(input_mask), multiple)
    return pack(x, indices), indices, first_rows(indices, input_mask)
