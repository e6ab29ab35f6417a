"""`build_squad_model`: run_squad's model, start and end logits at every position."""

import tensorflow as tf
import tf_keras as keras

from modeling.encoder import build_encoder, encoder_inputs
from modeling.heads import OutputProjection


class SpanLogits(OutputProjection):
  """Google's `cls/squad` layer: `output_weights` [2, H], `output_bias` [2] over every position.

  Call with the encoder's sequence output [B, S, H]; returns float32
  (start_logits, end_logits), each [B, S]. Google applies no dropout here.
  """

  def __init__(self, initializer_range, **kwargs):
    kwargs.pop("num_outputs", None)  # from get_config
    super().__init__(2, initializer_range, **kwargs)

  def call(self, sequence_output):
    hidden_size = sequence_output.shape[-1]
    logits = super().call(tf.reshape(sequence_output, [-1, hidden_size]))  # [B*S, 2]
    logits = tf.reshape(logits, tf.concat([tf.shape(sequence_output)[:2], [2]], 0))  # [B, S, 2]
    return logits[:, :, 0], logits[:, :, 1]


def build_squad_model(config, encoder=None, seq_length=None, dtype=None, name="bert_squad"):
  """The encoder plus run_squad's span layer, as one functional model.

  Inputs: `input_ids`, `input_mask`, `segment_ids` (int32 [B, S]). Outputs:
  {"start_logits", "end_logits"}, float32 [B, S]. The span layer, `cls_squad`,
  keeps Google's variables `cls/squad/output_weights` and `output_bias`, so
  Google-format SQuAD checkpoints load; the encoder is the layer `bert`. Built
  with the current kernel family (`modeling.kernels`).
  """
  if encoder is None:
    encoder = build_encoder(config, seq_length=seq_length, dtype=dtype)
  inputs = encoder_inputs(seq_length)
  sequence_output = encoder(inputs)["sequence_output"]
  start_logits, end_logits = SpanLogits(config.initializer_range, name="cls_squad",
                                        dtype=dtype)(sequence_output)
  return keras.Model(inputs=inputs, outputs={"start_logits": start_logits,
                                             "end_logits": end_logits}, name=name)
