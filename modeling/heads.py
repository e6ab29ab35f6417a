"""Pre-training heads (masked LM, next sentence) and the pre-training model."""

import tensorflow as tf
import tf_keras as keras

from modeling import activations
from modeling.encoder import INPUT_NAMES, POOLED, SEQUENCE, build_encoder, encoder_inputs
from modeling.kernels import current_kernels
from modeling.layers import add_bias, build_sublayer, dense_layer, layer_norm, truncated_normal


class MaskedLMHead(keras.layers.Layer):
  """Google's `cls/predictions`: transform (dense + act + LayerNorm), tied decoder, bias.

  Call with the encoder's output at the masked positions [B, P, H]; returns
  float32 logits [B, P, vocab]. The decoder is the word-embedding table
  [vocab, H] of the encoder, shared, not copied. Built with the current kernel
  family (`modeling.kernels`), kept as `kernels`.
  """

  def __init__(self, embedding_table, hidden_act, initializer_range, **kwargs):
    super().__init__(**kwargs)
    self.embedding_table = embedding_table
    self.kernels = current_kernels()
    self.transform_dense = dense_layer(
        embedding_table.shape[1], activation=activations.get(hidden_act),
        kernel_initializer=truncated_normal(initializer_range), name="transform_dense",
        dtype=self.dtype_policy)
    self.transform_layer_norm = layer_norm("transform_LayerNorm")

  def build(self, input_shape):
    vocab_size, hidden_size = self.embedding_table.shape
    build_sublayer(self.transform_dense, [None, None, hidden_size])
    build_sublayer(self.transform_layer_norm, [None, None, hidden_size])
    self.output_bias = self.add_weight("output_bias", shape=[vocab_size], initializer="zeros")
    super().build(input_shape)

  def call(self, x):
    x = tf.cast(self.transform_layer_norm(self.transform_dense(x)), self.compute_dtype)
    vocab_size, hidden_size = self.embedding_table.shape
    batch, predictions = tf.shape(x)[0], tf.shape(x)[1]
    # One 2-D matmul [B*P, H] x [H, V]: a [B, P, H] x [V, H] batch matmul would
    # broadcast the table and sum its gradient over a [B, V, H] tensor.
    logits = tf.matmul(tf.reshape(x, [-1, hidden_size]),
                       tf.cast(self.embedding_table, self.compute_dtype), transpose_b=True)
    logits = add_bias(tf.cast(logits, tf.float32), tf.cast(self.output_bias, tf.float32),
                      self.kernels)
    return tf.reshape(logits, [batch, predictions, vocab_size])  # [B, P, V]


class OutputProjection(keras.layers.Layer):
  """Dense with Google's head layout: `output_weights` [num_outputs, H], `output_bias`.

  Used for `cls/seq_relationship` (2 outputs) and run_classifier's output layer.
  Returns float32 logits [B, num_outputs]. Built with the current kernel family
  (`modeling.kernels`), kept as `kernels`.
  """

  def __init__(self, num_outputs, initializer_range, **kwargs):
    super().__init__(**kwargs)
    self.num_outputs = num_outputs
    self.initializer_range = initializer_range
    self.kernels = current_kernels()

  def build(self, input_shape):
    self.output_weights = self.add_weight(
        "output_weights", shape=[self.num_outputs, input_shape[-1]],
        initializer=truncated_normal(self.initializer_range))
    self.output_bias = self.add_weight("output_bias", shape=[self.num_outputs],
                                       initializer="zeros")
    super().build(input_shape)

  def call(self, pooled_output):
    logits = tf.matmul(pooled_output, self.output_weights, transpose_b=True)
    return add_bias(tf.cast(logits, tf.float32), tf.cast(self.output_bias, tf.float32),
                    self.kernels)

  def get_config(self):
    config = super().get_config()
    config.update(num_outputs=self.num_outputs, initializer_range=self.initializer_range)
    return config


def build_pretraining_model(config, encoder=None, seq_length=None, max_predictions_per_seq=None,
                            outputs=SEQUENCE, dtype=None):
  """The encoder plus Google's two pre-training heads, as one functional model.

  Inputs: `input_ids`, `input_mask`, `segment_ids` (int32 [B, S]) and
  `masked_lm_positions` (int32 [B, P]). Outputs: the encoder's outputs plus
  `masked_lm_logits` [B, P, vocab] and `next_sentence_logits` [B, 2] (float32).
  Layers: `bert` (the encoder), `cls_predictions`, `cls_seq_relationship`.

  outputs: the encoder's (`build_encoder`), except "pooled". "positions":
  the positions are the masked ones, so the encoder's last layer runs only at
  [CLS] and there (same losses, less work; for training), and
  `sequence_output` is [B, P, H] at the masked positions. Ignored when
  `encoder` is given: then it decides.

  Built with the current kernel family (`modeling.kernels`).
  """
  if encoder is None:
    if outputs == POOLED:
      raise ValueError("the masked-LM head reads the sequence output: outputs cannot be "
                       f"{POOLED!r}")
    encoder = build_encoder(config, seq_length=seq_length, outputs=outputs, dtype=dtype)
  inputs = encoder_inputs(seq_length)
  positions = keras.Input(shape=(max_predictions_per_seq,), dtype=tf.int32,
                          name="masked_lm_positions")
  encoder_feed = {name: inputs[name] for name in INPUT_NAMES}
  selected = "output_positions" in encoder.input_names
  if selected:
    encoder_feed["output_positions"] = positions
  outputs = dict(encoder(encoder_feed))
  masked = outputs["sequence_output"]
  if not selected:
    # [B, S, H] -> [B, P, H]
    masked = keras.layers.Lambda(lambda a: tf.gather(a[0], a[1], batch_dims=1),
                                 name="gather_masked", dtype=dtype)((masked, positions))
  table = encoder.get_layer("embeddings").word_embeddings
  outputs["masked_lm_logits"] = MaskedLMHead(
      table, config.hidden_act, config.initializer_range, name="cls_predictions",
      dtype=dtype)(masked)
  outputs["next_sentence_logits"] = OutputProjection(
      2, config.initializer_range, name="cls_seq_relationship",
      dtype=dtype)(outputs["pooled_output"])
  inputs["masked_lm_positions"] = positions
  return keras.Model(inputs=inputs, outputs=outputs, name="bert_pretraining")
