"""The TF Hub encoder: our BERT encoder under TF Hub's names, with an optional `.mlm`.

  encoder({"input_word_ids", "input_mask", "input_type_ids"}: int32 [batch, seq])
      -> "sequence_output" [batch, seq, H], "pooled_output" [batch, H],
         "default" (= pooled_output), "encoder_outputs" (every layer's
         [batch, seq, H], first to last);
  encoder.mlm(the same plus "masked_lm_positions" int32 [batch, P])
      -> the outputs above but "default", plus "mlm_logits" [batch, P, vocab].

Built with the stock Keras kernels (`modeling.kernels`), so the SavedModel
holds only standard TensorFlow ops and gradients: it runs and fine-tunes on
any device that loads it.
"""

import tensorflow as tf
import tf_keras as keras

from modeling import build_encoder, build_pretraining_model, kernels_scope
from tfhub.preprocessing import HUB_INPUT_NAMES

SIGNATURE_ENCODER = "serving_default"
SIGNATURE_MLM = "mlm"


def _hub_inputs():
  return {name: keras.Input(shape=(None,), dtype=tf.int32, name=name) for name in HUB_INPUT_NAMES}


def _ours(inputs):
  return {ours: inputs[hub] for hub, ours in HUB_INPUT_NAMES.items()}


def build_hub_encoder(config, with_mlm):
  """(encoder, weights_model): the model to export and the model to load a checkpoint into.

  weights_model is the plain encoder, or with_mlm the pre-training model whose
  masked-LM head `encoder.mlm` uses; both share the encoder's variables. The
  head's variables are kept out of `encoder.variables`, so fine-tuning the
  encoder does not see them.
  """
  with kernels_scope("keras"):
    if with_mlm:
      weights_model = build_pretraining_model(config, outputs="all_layers")
      bert = weights_model.get_layer("bert")
    else:
      weights_model = bert = build_encoder(config, outputs="all_layers")
  inputs = _hub_inputs()
  outputs = bert(_ours(inputs))
  encoder = keras.Model(inputs, {
      "sequence_output": outputs["sequence_output"], "pooled_output": outputs["pooled_output"],
      "default": outputs["pooled_output"], "encoder_outputs": outputs["encoder_outputs"]},
                        name="bert_encoder")
  if with_mlm:
    mlm_inputs = dict(inputs, masked_lm_positions=keras.Input(
        shape=(None,), dtype=tf.int32, name="masked_lm_positions"))
    outputs = weights_model(dict(_ours(mlm_inputs),
                                 masked_lm_positions=mlm_inputs["masked_lm_positions"]))
    mlm = keras.Model(mlm_inputs, {
        "sequence_output": outputs["sequence_output"], "pooled_output": outputs["pooled_output"],
        "encoder_outputs": outputs["encoder_outputs"], "mlm_logits": outputs["masked_lm_logits"]},
                      name="bert_mlm")
    # Keras would otherwise count the head's weights as the encoder's (TF Hub's exports do this).
    encoder._auto_track_sub_layers = False  # pylint: disable=protected-access
    encoder.mlm = mlm
  return encoder, weights_model


def _flat(outputs):
  """A signature's outputs: tensors only, `encoder_outputs` as encoder_outputs_0, _1, ..."""
  flat = {name: value for name, value in outputs.items() if name != "encoder_outputs"}
  flat.update({f"encoder_outputs_{i}": layer
               for i, layer in enumerate(outputs["encoder_outputs"])})
  return flat


def serving_signatures(encoder):
  """Named signatures for TF Serving: serving_default (the encoder) and, with a head, mlm."""
  seq = tf.TensorSpec([None, None], tf.int32)

  @tf.function(input_signature=[seq] * 3)
  def serve(input_word_ids, input_mask, input_type_ids):
    return _flat(encoder({"input_word_ids": input_word_ids, "input_mask": input_mask,
                          "input_type_ids": input_type_ids}, training=False))

  signatures = {SIGNATURE_ENCODER: serve}
  if hasattr(encoder, "mlm"):
    @tf.function(input_signature=[seq] * 4)
    def serve_mlm(input_word_ids, input_mask, input_type_ids, masked_lm_positions):
      return _flat(encoder.mlm({"input_word_ids": input_word_ids, "input_mask": input_mask,
                                "input_type_ids": input_type_ids,
                                "masked_lm_positions": masked_lm_positions}, training=False))
    signatures[SIGNATURE_MLM] = serve_mlm
  return signatures
