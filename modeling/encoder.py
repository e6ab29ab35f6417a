"""`build_encoder`: the BERT encoder as a Keras functional model."""

import tensorflow as tf
import tf_keras as keras

from modeling.kernels import check_kernels
from modeling.layers import (BertEmbeddings, PackTokens, TransformerLayer, dense_layer,
                             truncated_normal)

# Names of the encoder's inputs, as the features in Google's TFRecords.
INPUT_NAMES = ("input_ids", "input_mask", "segment_ids")


def encoder_inputs(seq_length=None):
  """The three int32 [batch, seq] Keras inputs, named like Google's features."""
  return {name: keras.Input(shape=(seq_length,), dtype=tf.int32, name=name)
          for name in INPUT_NAMES}


def build_encoder(config, seq_length=None, return_all_layers=False, dtype=None, name="bert",
                  selected_outputs=False, pooled_output_only=False, kernels="fused",
                  return_attention_scores=False, pack_tokens=False):
  """Builds the encoder of Google's `modeling.BertModel`.

  Args:
    config: a `BertConfig`.
    seq_length: static sequence length, or None for any length up to
      `max_position_embeddings`.
    return_all_layers: also output `embedding_output` [batch, seq, hidden] and
      `encoder_outputs`, the list of every layer's [batch, seq, hidden] output.
    dtype: a Keras dtype policy or its name (e.g. "mixed_bfloat16"); None uses
      the global policy. LayerNorm and softmax always compute in float32.
    name: the model's name.
    selected_outputs: add a fourth input, `output_positions` (int32
      [batch, q]), and compute the last layer only at the first token (for the
      pooler) and those positions; `sequence_output` is then [batch, q, hidden],
      the outputs at output_positions. Pre-training needs only the ~15% masked
      positions, so this skips most of the last layer's work.
    pooled_output_only: compute the last layer at the first token only and
      return `pooled_output` alone: all a sentence classifier reads.
    kernels: "fused" (our CPU-tuned layers) or "keras" (Keras' stock ones); same
      variables either way (see `modeling.kernels`).
    return_attention_scores: also output `attention_scores`, the list of every
      layer's float32 scores QK^T/sqrt(head_size) [batch, heads, seq, seq]
      before the padding mask is added (for distillation's attention losses).
    pack_tokens: with pooled_output_only, run the layers on the tokens only
      (input_mask 1, and each row's first position), packed once after the
      embeddings (`modeling.layers.packing`): the same output without the
      per-token work on padding. XLA compiles it too: the packed size is a
      dynamic dimension bounded by batch * seq.

  Returns:
    A `keras.Model` taking a dict of `input_ids`, `input_mask`, `segment_ids`
    (int32 [batch, seq]) and returning a dict with `sequence_output`
    [batch, seq, hidden] and `pooled_output` [batch, hidden] (tanh dense on
    the first token), plus the extra outputs above. Its layers are named
    `embeddings`, `layer_0`..`layer_{L-1}` and `pooler`.
  """
  check_kernels(kernels)
  if (selected_outputs or pooled_output_only) and (return_all_layers or
                                                   return_attention_scores):
    raise ValueError("selected_outputs and pooled_output_only compute the last layer at a few "
                     "positions only; they cannot return all layers or their attention scores")
  if selected_outputs and pooled_output_only:
    raise ValueError("choose one of selected_outputs and pooled_output_only")
  if pack_tokens and not pooled_output_only:
    raise ValueError("pack_tokens needs pooled_output_only")
  init = config.initializer_range
  inputs = encoder_inputs(seq_length)
  last_positions = None
  if selected_outputs:
    inputs["output_positions"] = keras.Input(shape=(None,), dtype=tf.int32,
                                             name="output_positions")
    # The first token, for the pooler, then the requested positions: [B, 1 + q].
    last_positions = keras.layers.Lambda(
        lambda p: tf.concat([tf.zeros_like(p[:, :1]), p], axis=1),
        name="first_and_output_positions")(inputs["output_positions"])
  elif pooled_output_only and not pack_tokens:
    # [B, 1], also for an empty batch whose sequence length is 0.
    last_positions = keras.layers.Lambda(lambda ids: tf.zeros([tf.shape(ids)[0], 1], tf.int32),
                                         name="first_position")(inputs["input_ids"])
  embeddings = BertEmbeddings(
      config.vocab_size, config.hidden_size, config.max_position_embeddings,
      config.type_vocab_size, config.hidden_dropout_prob, init, kernels, name="embeddings",
      dtype=dtype)
  x = embeddings((inputs["input_ids"], inputs["segment_ids"]))
  embedding_output = x
  token_indices = None
  if pack_tokens:
    # x [B, S, H] -> [1, T, H]; the last layer's queries are the first rows [B, 1].
    x, token_indices, last_positions = PackTokens(name="pack_tokens", dtype=dtype)(
        (x, inputs["input_mask"]))
  layer_outputs, attention_scores = [], []
  for i in range(config.num_hidden_layers):
    layer_inputs = (x, inputs["input_mask"])
    if last_positions is not None and i == config.num_hidden_layers - 1:
      layer_inputs += (last_positions,)
    layer = TransformerLayer(
        config.num_attention_heads, config.head_size, config.intermediate_size,
        config.hidden_act, config.hidden_dropout_prob, config.attention_probs_dropout_prob,
        init, kernels, name=f"layer_{i}", dtype=dtype)
    if return_attention_scores:
      x, scores = layer(layer_inputs, return_scores=True)
      attention_scores.append(scores)
    else:
      x = layer(layer_inputs, token_indices=token_indices)
    layer_outputs.append(x)
  first_token = keras.layers.Lambda(lambda t: t[:, 0, :], name="first_token",
                                    dtype=dtype)(x)  # [B, H]
  pooled = dense_layer(config.hidden_size, kernels, activation="tanh",
                       kernel_initializer=truncated_normal(init), name="pooler",
                       dtype=dtype)(first_token)
  if pooled_output_only:
    return keras.Model(inputs=inputs, outputs={"pooled_output": pooled}, name=name)
  if last_positions is not None:
    x = keras.layers.Lambda(lambda t: t[:, 1:, :], name="output_positions_output",
                            dtype=dtype)(x)  # [B, q, H]
  outputs = {"sequence_output": x, "pooled_output": pooled}
  if return_all_layers:
    outputs["embedding_output"] = embedding_output
    outputs["encoder_outputs"] = layer_outputs
  if return_attention_scores:
    outputs["attention_scores"] = attention_scores
  return keras.Model(inputs=inputs, outputs=outputs, name=name)
