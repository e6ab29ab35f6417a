"""`build_encoder`: the BERT encoder as a Keras functional model."""

import tensorflow as tf
import tf_keras as keras

from modeling.layers import (BertEmbeddings, PackTokens, TransformerLayer, dense_layer,
                             truncated_normal)

# Names of the encoder's inputs, as the features in Google's TFRecords.
INPUT_NAMES = ("input_ids", "input_mask", "segment_ids")


def encoder_inputs(seq_length=None):
  """The three int32 [batch, seq] Keras inputs, named like Google's features."""
  return {name: keras.Input(shape=(seq_length,), dtype=tf.int32, name=name)
          for name in INPUT_NAMES}


# What a caller reads from the encoder: `build_encoder(outputs=...)`.
SEQUENCE = "sequence"
ALL_LAYERS = "all_layers"
ALL_LAYERS_AND_SCORES = "all_layers_and_scores"
POSITIONS = "positions"
POOLED = "pooled"
OUTPUTS = (SEQUENCE, ALL_LAYERS, ALL_LAYERS_AND_SCORES, POSITIONS, POOLED)


def build_encoder(config, seq_length=None, outputs=SEQUENCE, dtype=None, name="bert"):
  """Builds the encoder of Google's `modeling.BertModel`.

  Args:
    config: a `BertConfig`.
    seq_length: static sequence length, or None for any length up to
      `max_position_embeddings`.
    outputs: what the caller reads, which decides the work done (the last
      layer computes only the positions read):
      "sequence": `sequence_output` [batch, seq, hidden] (the last layer at
        every position) and `pooled_output` [batch, hidden] (tanh dense on the
        first token).
      "all_layers": those, `embedding_output` [batch, seq, hidden] and
        `encoder_outputs`, the list of every layer's [batch, seq, hidden] output.
      "all_layers_and_scores": those and `attention_scores`, the list of every
        layer's float32 scores QK^T/sqrt(head_size) [batch, heads, seq, seq]
        before the padding mask is added (for distillation's attention losses).
      "positions": a fourth input, `output_positions` (int32 [batch, q]); the
        last layer runs at the first token (for the pooler) and those positions
        only, and `sequence_output` is [batch, q, hidden], the outputs there.
        Pre-training reads only the ~15% masked positions.
      "pooled": `pooled_output` alone, all a sentence classifier reads. The
        layers run on the tokens only (input_mask 1, and each row's first
        position), packed once after the embeddings (`modeling.layers.packing`),
        and the last layer at the first tokens only (under XLA, every position:
        see `PackTokens`).
    dtype: a Keras dtype policy or its name (e.g. "mixed_bfloat16"); None uses
      the global policy. LayerNorm and softmax always compute in float32.
    name: the model's name.

  The layers use the current kernel family (`modeling.kernels`); either family
  holds the same variables.

  Returns:
    A `keras.Model` taking a dict of `input_ids`, `input_mask`, `segment_ids`
    (int32 [batch, seq]), plus `output_positions` for "positions", and
    returning the dict of outputs above. Its layers are named `embeddings`,
    `layer_0`..`layer_{L-1}` and `pooler`.
  """
  if outputs not in OUTPUTS:
    raise ValueError(f"outputs must be one of {', '.join(map(repr, OUTPUTS))}, got {outputs!r}")
  init = config.initializer_range
  inputs = encoder_inputs(seq_length)
  last_positions = None
  if outputs == POSITIONS:
    inputs["output_positions"] = keras.Input(shape=(None,), dtype=tf.int32,
                                             name="output_positions")
    # The first token, for the pooler, then the requested positions: [B, 1 + q].
    last_positions = keras.layers.Lambda(
        lambda p: tf.concat([tf.zeros_like(p[:, :1]), p], axis=1),
        name="first_and_output_positions")(inputs["output_positions"])
  embeddings = BertEmbeddings(
      config.vocab_size, config.hidden_size, config.max_position_embeddings,
      config.type_vocab_size, config.hidden_dropout_prob, init, name="embeddings", dtype=dtype)
  x = embeddings((inputs["input_ids"], inputs["segment_ids"]))
  embedding_output = x
  token_indices = None
  if outputs == POOLED:
    # x [B, S, H] -> [1, T, H]; the last layer's queries are the first rows [B, 1].
    x, token_indices, last_positions = PackTokens(name="pack_tokens", dtype=dtype)(
        (x, inputs["input_mask"]))
  with_scores = outputs == ALL_LAYERS_AND_SCORES
  layer_outputs, attention_scores = [], []
  for i in range(config.num_hidden_layers):
    layer_inputs = (x, inputs["input_mask"])
    if last_positions is not None and i == config.num_hidden_layers - 1:
      layer_inputs += (last_positions,)
    layer = TransformerLayer(
        config.num_attention_heads, config.head_size, config.intermediate_size,
        config.hidden_act, config.hidden_dropout_prob, config.attention_probs_dropout_prob,
        init, name=f"layer_{i}", dtype=dtype)
    if with_scores:
      x, scores = layer(layer_inputs, return_scores=True)
      attention_scores.append(scores)
    else:
      x = layer(layer_inputs, token_indices=token_indices)
    layer_outputs.append(x)
  first_token = keras.layers.Lambda(lambda t: t[:, 0, :], name="first_token",
                                    dtype=dtype)(x)  # [B, H]
  pooled = dense_layer(config.hidden_size, activation="tanh",
                       kernel_initializer=truncated_normal(init), name="pooler",
                       dtype=dtype)(first_token)
  if outputs == POOLED:
    return keras.Model(inputs=inputs, outputs={"pooled_output": pooled}, name=name)
  if outputs == POSITIONS:
    x = keras.layers.Lambda(lambda t: t[:, 1:, :], name="output_positions_output",
                            dtype=dtype)(x)  # [B, q, H]
  model_outputs = {"sequence_output": x, "pooled_output": pooled}
  if outputs in (ALL_LAYERS, ALL_LAYERS_AND_SCORES):
    model_outputs["embedding_output"] = embedding_output
    model_outputs["encoder_outputs"] = layer_outputs
  if with_scores:
    model_outputs["attention_scores"] = attention_scores
  return keras.Model(inputs=inputs, outputs=model_outputs, name=name)
