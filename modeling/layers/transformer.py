"""One post-LayerNorm Transformer layer (Google's `bert/encoder/layer_N`)."""

import tensorflow as tf
import tf_keras as keras

from modeling import activations
from modeling.kernels import current_kernels
from modeling.layers.attention import SelfAttention
from modeling.layers.dense import dense_layer
from modeling.layers.dropout import dropout_layer
from modeling.layers.normalization import build_sublayer, layer_norm, truncated_normal


class TransformerLayer(keras.layers.Layer):
  """Self-attention, residual + LayerNorm, feed-forward, residual + LayerNorm.

  Call with `(x, input_mask)`; returns [batch, seq, hidden] in the compute dtype.
  Call with `(x, input_mask, positions)`, positions int [batch, q], to compute
  the output at those positions only (attending over all of x): [batch, q, hidden].
  `return_scores=True` also returns the attention's pre-mask scores
  [batch, heads, q, seq] (see `SelfAttention`).

  `token_indices` (int32 [T], `modeling.layers.packing`): x is the packed rows
  [1, T, hidden] of the tokens at these flat positions of input_mask's
  [batch, seq], and so is the output; `positions` [batch, q] are then rows of
  x, and the output at them is [batch, q, hidden] as above.

  Built with the current kernel family (`modeling.kernels`), kept as `kernels`.
  """

  def __init__(self, num_heads, head_size, intermediate_size, hidden_act, hidden_dropout_rate,
               attention_dropout_rate, initializer_range, **kwargs):
    super().__init__(**kwargs)
    self.num_heads = num_heads
    self.head_size = head_size
    self.intermediate_size = intermediate_size
    self.hidden_act = hidden_act
    self.hidden_dropout_rate = hidden_dropout_rate
    self.attention_dropout_rate = attention_dropout_rate
    self.initializer_range = initializer_range
    self.kernels = current_kernels()
    hidden = num_heads * head_size
    self.attention = SelfAttention(num_heads, head_size, attention_dropout_rate,
                                   initializer_range, name="attention", dtype=self.dtype_policy)
    self.attention_dropout = dropout_layer(hidden_dropout_rate, dtype=self.dtype_policy)
    self.attention_layer_norm = layer_norm("attention_LayerNorm")
    # The activation is applied in call(): training may use its compiled form.
    self.intermediate = dense_layer(
        intermediate_size, kernel_initializer=truncated_normal(initializer_range),
        name="intermediate", dtype=self.dtype_policy)
    self.output_dense = dense_layer(
        hidden, kernel_initializer=truncated_normal(initializer_range),
        name="output_dense", dtype=self.dtype_policy)
    self.output_dropout = dropout_layer(hidden_dropout_rate, dtype=self.dtype_policy)
    self.output_layer_norm = layer_norm("output_LayerNorm")

  def build(self, input_shape):
    hidden = self.num_heads * self.head_size
    build_sublayer(self.attention, None)
    build_sublayer(self.attention_layer_norm, [None, None, hidden])
    build_sublayer(self.intermediate, [None, None, hidden])
    build_sublayer(self.output_dense, [None, None, self.intermediate_size])
    build_sublayer(self.output_layer_norm, [None, None, hidden])
    super().build(input_shape)

  def call(self, inputs, training=None, return_scores=False, token_indices=None):
    x, input_mask = inputs[:2]
    if len(inputs) == 2:
      attention_inputs, queries = (x, input_mask), x
    else:
      positions = inputs[2]
      if token_indices is None:
        queries = tf.gather(x, positions, batch_dims=1)  # [B, q, H]
      else:
        queries = tf.gather(x[0], positions)  # [T, H] -> [B, q, H]
      attention_inputs = (x, input_mask, queries)
    attention = self.attention(attention_inputs, training=training, return_scores=return_scores,
                               token_indices=token_indices)
    if return_scores:
      attention, scores = attention
    attention = self.attention_dropout(attention, training=training)
    attention = tf.cast(self.attention_layer_norm(attention + queries), self.compute_dtype)
    if training is None:
      training = keras.backend.learning_phase()
    # The fused kernels' compiled GELU only when training is known to be on (a
    # boolean tensor decides only at run time): it is compiled per shape.
    activation = activations.get(
        self.hidden_act,
        compiled=self.kernels == "fused" and bool(tf.get_static_value(training)))
    if self.kernels == "fused":
      intermediate = self.intermediate(attention, activation=activation)
    else:
      intermediate = self.intermediate(attention)
      if activation is not None:
        intermediate = activation(intermediate)
    out = self.output_dense(intermediate)
    out = self.output_dropout(out, training=training)
    out = tf.cast(self.output_layer_norm(out + attention), self.compute_dtype)
    return (out, scores) if return_scores else out

  def get_config(self):
    config = super().get_config()
    config.update(num_heads=self.num_heads, head_size=self.head_size,
                  intermediate_size=self.intermediate_size, hidden_act=self.hidden_act,
                  hidden_dropout_rate=self.hidden_dropout_rate,
                  attention_dropout_rate=self.attention_dropout_rate,
                  initializer_range=self.initializer_range)
    return config
