"""Tiny BERT configs and random inputs, and the weights of checkpoints and of MiniLM
to compare models by."""

import json
import os

import numpy as np
import tensorflow as tf

import modeling

# A model to build in process: vocab 99, L=2, H=32.
TINY_BERT = modeling.BertConfig(vocab_size=99, hidden_size=32, num_hidden_layers=2,
                                num_attention_heads=4, intermediate_size=37, type_vocab_size=2,
                                max_position_embeddings=64)
# The fields of the trainers' bert_config.json but vocab_size: L=2, H=64, 64 positions.
TINY_CONFIG = dict(attention_probs_dropout_prob=0.1, hidden_act="gelu", hidden_dropout_prob=0.1,
                   hidden_size=64, initializer_range=0.02, intermediate_size=128,
                   max_position_embeddings=64, num_attention_heads=2, num_hidden_layers=2,
                   type_vocab_size=2)


def bert_inputs(batch=3, seq=16, vocab=99, seed=0):
  """Random encoder features: rows of random lengths, padded, two segments each."""
  rng = np.random.default_rng(seed)
  lengths = rng.integers(3, seq + 1, size=batch)
  mask = (np.arange(seq)[None, :] < lengths[:, None]).astype(np.int32)
  ids = rng.integers(1, vocab, size=(batch, seq)).astype(np.int32) * mask
  segments = ((np.arange(seq)[None, :] >= lengths[:, None] // 2) * mask).astype(np.int32)
  return {"input_ids": ids, "input_mask": mask, "segment_ids": segments}


def tiny_config_file(path, vocab_size, **overrides):
  """Writes TINY_CONFIG with `vocab_size` and `overrides` to `path`; returns the path."""
  with open(path, "w") as f:
    json.dump(dict(TINY_CONFIG, vocab_size=vocab_size, **overrides), f)
  return str(path)


def checkpoint_weights(output_dir):
  """{checkpoint key: array} of the model variables in output_dir's latest checkpoint."""
  reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(output_dir)))
  return {k: reader.get_tensor(k) for k in reader.get_variable_to_shape_map()
          if "OPTIMIZER_SLOT" not in k and k.startswith("bert_weights/")}


def checkpoint_word_embeddings(output_dir, vocab_size):
  """The word embeddings [vocab_size, H] in output_dir's latest checkpoint."""
  found = [v for v in checkpoint_weights(output_dir).values()
           if v.ndim == 2 and v.shape[0] == vocab_size]
  assert len(found) == 1, [v.shape for v in found]
  return found[0]


def minilm_word_embeddings(minilm_dir):
  """MiniLM's word embeddings [30522, 384], read from its safetensors file."""
  from safetensors.numpy import load_file  # pylint: disable=import-outside-toplevel
  weights = load_file(os.path.join(minilm_dir, "model.safetensors"))
  return next(v for k, v in weights.items() if k.endswith("word_embeddings.weight"))


def model_weights(model):
  """{variable name: array} of a Keras model."""
  return {v.name: v.numpy() for v in model.weights}


def pretraining_loss(outputs, features):
  """Google's run_pretraining losses of a pre-training model's outputs and a TFRecord's labels:
  {"masked_lm_loss", "next_sentence_loss", "total_loss" (their sum)}."""
  mlm, _, _ = modeling.masked_lm_loss(outputs["masked_lm_logits"], features["masked_lm_ids"],
                                      features["masked_lm_weights"])
  nsp, _, _ = modeling.next_sentence_loss(outputs["next_sentence_logits"],
                                          features["next_sentence_labels"])
  return {"masked_lm_loss": mlm, "next_sentence_loss": nsp, "total_loss": mlm + nsp}
