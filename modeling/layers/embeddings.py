"""Word + segment + learned position embeddings, LayerNorm and dropout."""

import tensorflow as tf
import tf_keras as keras

from modeling.kernels import current_kernels
from modeling.layers.dropout import dropout_layer
from modeling.layers.normalization import build_sublayer, layer_norm, truncated_normal


class BertEmbeddings(keras.layers.Layer):
  """Google's `bert/embeddings` scope: three tables, LayerNorm, dropout.

  Call with `(input_ids, segment_ids)`, int32 [batch, seq]; returns
  [batch, seq, hidden] in the layer's compute dtype. The tables stay float32
  under mixed precision (no autocast): the sum is taken in float32 and
  normalised before the cast.

  Built with the current kernel family (`modeling.kernels`), kept as `kernels`.
  """

  def __init__(self, vocab_size, hidden_size, max_position_embeddings, type_vocab_size,
               dropout_rate, initializer_range, **kwargs):
    super().__init__(**kwargs)
    self.vocab_size = vocab_size
    self.hidden_size = hidden_size
    self.max_position_embeddings = max_position_embeddings
    self.type_vocab_size = type_vocab_size
    self.dropout_rate = dropout_rate
    self.initializer_range = initializer_range
    self.kernels = current_kernels()
    self.layer_norm = layer_norm("LayerNorm")
    self.dropout = dropout_layer(dropout_rate, dtype=self.dtype_policy)

  def build(self, input_shape):
    def table(name, rows):
      return self.add_weight(name, shape=[rows, self.hidden_size],
                             initializer=truncated_normal(self.initializer_range),
                             experimental_autocast=False)
    self.word_embeddings = table("word_embeddings", self.vocab_size)
    self.token_type_embeddings = table("token_type_embeddings", self.type_vocab_size)
    self.position_embeddings = table("position_embeddings", self.max_position_embeddings)
    build_sublayer(self.layer_norm, [None, None, self.hidden_size])
    super().build(input_shape)

  def call(self, inputs, training=None):
    input_ids, segment_ids = inputs
    seq_length = tf.shape(input_ids)[1]
    # Google's order of the sums: (word + token_type) + position. The rows
    # are gathered from the tables' values, not the variables: a gather from
    # a variable (ResourceGather) switches it to copy-on-read, after which
    # every read and optimizer update of the word table copies it whole.
    x = tf.gather(tf.convert_to_tensor(self.word_embeddings), input_ids)
    x = x + tf.gather(tf.convert_to_tensor(self.token_type_embeddings), segment_ids)
    x = x + self.position_embeddings[tf.newaxis, :seq_length, :]  # [1, seq, hidden]
    x = tf.cast(self.layer_norm(x), self.compute_dtype)
    return self.dropout(x, training=training)

  def get_config(self):
    config = super().get_config()
    config.update(vocab_size=self.vocab_size, hidden_size=self.hidden_size,
                  max_position_embeddings=self.max_position_embeddings,
                  type_vocab_size=self.type_vocab_size, dropout_rate=self.dropout_rate,
                  initializer_range=self.initializer_range)
    return config
