"""`build_classifier`: run_classifier's model, dropout + dense on the pooled output."""

import tf_keras as keras

from modeling.encoder import POOLED, build_encoder, encoder_inputs
from modeling.heads import OutputProjection

# run_classifier applies dropout with keep_prob 0.9 to the pooled output.
CLASSIFIER_DROPOUT = 0.1


def build_classifier(config, num_labels, encoder=None, seq_length=None, dtype=None,
                     dropout_rate=CLASSIFIER_DROPOUT, name="bert_classifier"):
  """The encoder plus run_classifier's output layer, as one functional model.

  Inputs: `input_ids`, `input_mask`, `segment_ids` (int32 [B, S]). Output: float32
  logits [B, num_labels] (num_labels=1 for regression). The output layer,
  `classifier`, keeps Google's variables `output_weights` [num_labels, H] and
  `output_bias`; the encoder is the layer `bert`.

  The encoder built here reads the pooled output only (`build_encoder`'s
  "pooled"): its layers skip the padding and its last layer computes [CLS]
  only, the same logits for less work. Built with the current kernel family
  (`modeling.kernels`).
  """
  if num_labels < 1:
    raise ValueError(f"num_labels must be >= 1, got {num_labels}")
  if encoder is None:
    encoder = build_encoder(config, seq_length=seq_length, outputs=POOLED, dtype=dtype)
  inputs = encoder_inputs(seq_length)
  pooled = encoder(inputs)["pooled_output"]
  pooled = keras.layers.Dropout(dropout_rate, name="classifier_dropout", dtype=dtype)(pooled)
  logits = OutputProjection(num_labels, config.initializer_range, name="classifier",
                            dtype=dtype)(pooled)
  return keras.Model(inputs=inputs, outputs=logits, name=name)
