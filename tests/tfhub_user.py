"""What a TF Hub user runs on our exports: imports only TensorFlow, tf-text, TF Hub and tf-keras.

Run by tests/test_tfhub_export.py in a fresh process:
  python tests/tfhub_user.py OUT.npz PREPROCESSING MODEL_WITH_MLM MINILM_MODEL FIXTURES
It saves what the test compares in OUT.npz; it asserts nothing itself.
"""

import importlib
import sys

import numpy as np
import tensorflow as tf
import tensorflow_hub as hub
import tf_keras as keras


def encode(encoder, inputs, training=False):
  outputs = encoder(inputs, training=training)
  return {"sequence_output": outputs["sequence_output"].numpy(),
          "pooled_output": outputs["pooled_output"].numpy(),
          "default": outputs["default"].numpy(),
          "encoder_outputs": np.stack([x.numpy() for x in outputs["encoder_outputs"]])}


def fine_tune(preprocessing_path, encoder_path, texts, labels):
  """A text classifier around hub.KerasLayer(trainable=True); returns losses and weights."""
  keras.utils.set_random_seed(0)
  encoder = hub.KerasLayer(encoder_path, trainable=True)
  text = keras.Input(shape=(), dtype=tf.string)
  pooled = encoder(hub.KerasLayer(preprocessing_path)(text))["pooled_output"]
  model = keras.Model(text, keras.layers.Dense(2)(pooled))
  model.compile(optimizer=keras.optimizers.Adam(1e-3),
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
  before = [w.numpy() for w in encoder.trainable_weights]
  history = model.fit(tf.constant(texts), tf.constant(labels), batch_size=len(texts), epochs=20,
                      shuffle=False, verbose=0)
  change = max(np.abs(w.numpy() - b).max() for w, b in zip(encoder.trainable_weights, before))
  return np.array(history.history["loss"]), change, len(encoder.trainable_weights)


def main(out, preprocessing_path, mlm_path, minilm_path, fixtures):
  importlib.import_module("tensorflow_text")  # registers the preprocessing SavedModel's ops
  tiny = np.load(f"{fixtures}/google_bert_tiny/reference.npz")
  minilm = np.load(f"{fixtures}/minilm_reference.npz")
  results = {}
  pre = hub.load(preprocessing_path)
  # Tokenize each segment, then pack pairs: TF Hub's two-step use.
  tokenize = hub.KerasLayer(pre.tokenize)
  pack = hub.KerasLayer(pre.bert_pack_inputs, arguments={"seq_length": 64})
  packed = pack([tokenize(tf.constant(minilm["text_a"])), tokenize(tf.constant(minilm["text_b"]))])
  for name, value in packed.items():
    results[f"pair_{name}"] = value.numpy()
  words = pre.tokenize(tf.constant(["Hello unaffable world!"]))
  results["words"] = words.merge_dims(0, 1).to_tensor(-1).numpy()
  results["special_tokens"] = np.array([
      pre.tokenize.get_special_tokens_dict()[name].numpy()
      for name in ("vocab_size", "start_of_sequence_id", "end_of_segment_id", "padding_id",
                   "mask_id")])
  single = pre(tf.constant(minilm["text_a"]))  # the default call: one segment, default length
  for name, value in single.items():
    results[f"single_{name}"] = value.numpy()

  # The encoder with its masked-LM head, on the inputs of Google's reference outputs.
  mlm_model = hub.load(mlm_path)
  inputs = {"input_word_ids": tiny["input_ids"], "input_mask": tiny["input_mask"],
            "input_type_ids": tiny["segment_ids"]}
  for name, value in encode(mlm_model, inputs).items():
    results[f"tiny_{name}"] = value
  mlm = mlm_model.mlm(dict(inputs, masked_lm_positions=tiny["masked_lm_positions"]),
                      training=False)
  results["tiny_mlm_logits"] = mlm["mlm_logits"].numpy()
  served = mlm_model.signatures["serving_default"](
      **{name: tf.constant(value) for name, value in inputs.items()})
  results["tiny_served_sequence_output"] = served["sequence_output"].numpy()
  results["tiny_served_layer_0"] = served["encoder_outputs_0"].numpy()
  served = mlm_model.signatures["mlm"](
      masked_lm_positions=tf.constant(tiny["masked_lm_positions"]),
      **{name: tf.constant(value) for name, value in inputs.items()})
  results["tiny_served_mlm_logits"] = served["mlm_logits"].numpy()
  results["tiny_do_lower_case"] = np.array(mlm_model.do_lower_case.numpy())
  layer = hub.KerasLayer(mlm_path, trainable=True)
  first, second = (layer(inputs, training=True)["pooled_output"].numpy() for _call in range(2))
  results["tiny_dropout_difference"] = np.abs(first - second).max()

  # Raw text through both SavedModels, against HF's outputs for the MiniLM weights.
  minilm_encoder = hub.KerasLayer(minilm_path)
  minilm_inputs = pack([tokenize(tf.constant(minilm["text_a"])),
                        tokenize(tf.constant(minilm["text_b"]))])
  for name, value in encode(minilm_encoder, minilm_inputs).items():
    results[f"minilm_{name}"] = value

  texts = [str(t) for t in minilm["text_a"]]
  labels = [i % 2 for i in range(len(texts))]
  results["fine_tune_loss"], results["fine_tune_change"], results["fine_tune_weights"] = (
      fine_tune(preprocessing_path, mlm_path, texts, labels))
  np.savez(out, **results)


if __name__ == "__main__":
  main(*sys.argv[1:])
