"""Multi-head self-attention with Google's padding mask."""

import math

import tensorflow as tf
import tf_keras as keras

from modeling.kernels import current_kernels
from modeling.layers.dense import dense_layer
from modeling.layers.dropout import dropout_layer
from modeling.layers.normalization import build_sublayer, truncated_normal
from modeling.layers.packing import pack, unpack

# The padding keys' score before the softmax (Google adds it to their scores; we put it in
# their place: the same weights, exactly 0).
_MASK_SCORE = -10000.0


class SelfAttention(keras.layers.Layer):
  """Google's `attention/self` (query, key, value) and `attention/output/dense`.

  Call with `(x, input_mask)`: x [batch, seq, hidden], input_mask int [batch, seq]
  (1 = real token). Returns the projected context [batch, seq, hidden], before
  the residual and LayerNorm. The softmax runs in float32.

  Call with `(x, input_mask, queries)`, queries [batch, q, hidden] (rows of x),
  to attend from those rows only: returns [batch, q, hidden].

  `return_scores=True` also returns the float32 scores QK^T/sqrt(head_size)
  [batch, heads, from, to], before the padding mask is added (what
  distillation's attention losses compare).

  `token_indices` (int32 [T], `modeling.layers.packing`): x holds the packed
  rows [1, T, hidden] of the tokens at these flat positions of input_mask's
  [batch, seq]. The projections run on those rows; keys and values are
  unpacked (zeros at padding) for the attention, and without `queries` the
  output is packed rows [1, T, hidden] too.

  Built with the current kernel family (`modeling.kernels`), kept as `kernels`.

  The padding keys' scores are replaced by -10000 (a select) where Google adds -10000 to
  them: the softmax weights are the same (a padding key's is exactly 0 in float32 either
  way, and so is its scores' gradient), and a full-integer TFLite model quantizes the
  select's -10000 into the scores' calibrated range, where an added mask tensor, calibrated
  on unpadded rows, would quantize to 0 (`tflite.export`). A row with no real token at all
  (a batch's padding row) attends evenly to every position.
  """

  def __init__(self, num_heads, head_size, dropout_rate, initializer_range, **kwargs):
    super().__init__(**kwargs)
    self.num_heads = num_heads
    self.head_size = head_size
    self.dropout_rate = dropout_rate
    self.initializer_range = initializer_range
    self.kernels = current_kernels()
    hidden = num_heads * head_size

    def dense(name):
      return dense_layer(hidden, kernel_initializer=truncated_normal(initializer_range),
                         name=name, dtype=self.dtype_policy)
    self.query = dense("query")
    self.key = dense("key")
    self.value = dense("value")
    self.output_dense = dense("output_dense")
    self.dropout = dropout_layer(dropout_rate, dtype=self.dtype_policy)

  def build(self, input_shape):
    hidden = self.num_heads * self.head_size
    for layer in (self.query, self.key, self.value, self.output_dense):
      build_sublayer(layer, [None, None, hidden])
    super().build(input_shape)

  def _split_heads(self, x):
    """[B, S, N*D] -> [B, N, S, D], so each head's matmuls are plain batch matmuls
    (an einsum over [B, S, N, D] costs more than these transposes on CPU)."""
    batch, seq = tf.shape(x)[0], tf.shape(x)[1]
    x = tf.reshape(x, [batch, seq, self.num_heads, self.head_size])  # [B, S, N, D]
    return tf.transpose(x, [0, 2, 1, 3])

  def call(self, inputs, training=None, return_scores=False, token_indices=None):
    x, input_mask, queries = inputs if len(inputs) == 3 else (*inputs, inputs[0])
    # Scaled before the product: q has S/D times fewer elements than the scores.
    q = self.query(queries) * tf.cast(1.0 / math.sqrt(self.head_size), self.compute_dtype)
    k, v = self.key(x), self.value(x)
    packed_queries = token_indices is not None and len(inputs) == 2
    if token_indices is not None:  # [1, T, H] -> [B, S, H]
      k, v = (unpack(t, token_indices, input_mask) for t in (k, v))
      if packed_queries:
        q = unpack(q, token_indices, input_mask)
    q, k, v = self._split_heads(q), self._split_heads(k), self._split_heads(v)
    scores = tf.cast(tf.matmul(q, k, transpose_b=True), tf.float32)  # [B, N, from, to]
    # A reshape, not [:, None, None, :]: TFLite's StridedSlice adds no axes.
    mask = tf.reshape(tf.cast(input_mask, tf.float32),
                      [tf.shape(input_mask)[0], 1, 1, -1])  # [B, 1, 1, to]
    masked = tf.where(mask > 0.5, scores, _MASK_SCORE)
    probs = tf.cast(tf.nn.softmax(masked, axis=-1), self.compute_dtype)
    probs = self.dropout(probs, training=training)
    context = tf.transpose(tf.matmul(probs, v), [0, 2, 1, 3])  # [B, from, N, D]
    batch, seq = tf.shape(context)[0], tf.shape(context)[1]
    context = tf.reshape(context, [batch, seq, self.num_heads * self.head_size])
    if packed_queries:
      context = pack(context, token_indices)  # [B, S, H] -> [1, T, H]
    output = self.output_dense(context)
    return (output, scores) if return_scores else output

  def get_config(self):
    config = super().get_config()
    config.update(num_heads=self.num_heads, head_size=self.head_size,
                  dropout_rate=self.dropout_rate,
                  initializer_range=self.initializer_range)
    return config
