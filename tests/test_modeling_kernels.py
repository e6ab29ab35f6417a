"""The `kernels` build option: "fused" (our CPU-tuned pieces) and "keras" (stock pieces)
build the same variables and compute the same outputs, losses and gradients."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import modeling
from modeling import activations, losses
from modeling.heads import OutputProjection
from modeling.layers import (BertEmbeddings, Dropout, MatmulDense, SelfAttention,
                             TransformerLayer)
from modeling.layers.normalization import LayerNorm

# Dropout off: the two paths draw different masks (each is tested on its own).
CONFIG = modeling.BertConfig(vocab_size=99, hidden_size=32, num_hidden_layers=2,
                             num_attention_heads=4, intermediate_size=37, type_vocab_size=2,
                             max_position_embeddings=64, hidden_dropout_prob=0.0,
                             attention_probs_dropout_prob=0.0)
BATCH, SEQ, PREDICTIONS, LABELS = 3, 16, 4, 3
# float32: elementwise, relative to each tensor's largest value (sums of opposite terms
# cancel); mixed_bfloat16 (bfloat16 keeps 8 bits): relative to each tensor's norm, or to
# 0.01 for gradients that are zero but for rounding (the key bias's: a softmax ignores a
# constant added to all of a query's scores).
TOLERANCES = {"float32": 1e-5, "mixed_bfloat16": 3e-2}


def _features(seed=0):
  rng = np.random.default_rng(seed)
  lengths = rng.integers(4, SEQ + 1, size=BATCH)
  mask = (np.arange(SEQ)[None, :] < lengths[:, None]).astype(np.int32)
  features = {
      "input_ids": rng.integers(1, CONFIG.vocab_size, size=(BATCH, SEQ)).astype(np.int32) * mask,
      "input_mask": mask,
      "segment_ids": ((np.arange(SEQ)[None, :] >= lengths[:, None] // 2) * mask).astype(np.int32),
      "masked_lm_positions": rng.integers(0, 4, size=(BATCH, PREDICTIONS)).astype(np.int32),
  }
  labels = {
      "masked_lm_ids": rng.integers(0, CONFIG.vocab_size, (BATCH, PREDICTIONS)).astype(np.int32),
      "masked_lm_weights": (rng.random((BATCH, PREDICTIONS)) < 0.8).astype(np.float32),
      "next_sentence_labels": rng.integers(0, 2, (BATCH, 1)).astype(np.int32),
      "label_ids": rng.integers(0, LABELS, BATCH).astype(np.int32),
  }
  return features, labels


def _build(kind, kernels, dtype):
  if kind == "encoder":
    return modeling.build_encoder(CONFIG, return_all_layers=True, dtype=dtype, kernels=kernels)
  if kind == "pretraining":
    return modeling.build_pretraining_model(CONFIG, max_predictions_per_seq=PREDICTIONS,
                                            masked_positions_only=True, dtype=dtype,
                                            kernels=kernels)
  return modeling.build_classifier(CONFIG, LABELS, dtype=dtype, dropout_rate=0.0,
                                   kernels=kernels)


def _loss(kind, outputs, labels, kernels, upstream):
  """A scalar that every output feeds: the model's own loss where it has one."""
  if kind == "encoder":
    return (tf.reduce_sum(tf.cast(outputs["sequence_output"], tf.float32) * upstream)
            + tf.reduce_sum(tf.cast(outputs["pooled_output"], tf.float32)))
  if kind == "pretraining":
    return modeling.pretraining_loss(outputs, labels, kernels=kernels)["total_loss"]
  per_example, _ = losses.sparse_softmax_cross_entropy(outputs, labels["label_ids"], kernels)
  return tf.reduce_mean(per_example)


def _run(model, kind, kernels, training, jit_compile):
  features, labels = _features()
  features = {name: features[name] for name in model.input_names}
  upstream = tf.constant(np.random.default_rng(1).normal(size=(BATCH, SEQ, 32)), tf.float32)

  @tf.function(jit_compile=jit_compile)
  def step(features):
    with tf.GradientTape() as tape:
      outputs = model(features, training=training)
      loss = _loss(kind, outputs, labels, kernels, upstream)
    return outputs, loss, tape.gradient(loss, model.trainable_variables)
  return step(features)


def _assert_close(a, b, tolerance, relative_to_norm, what):
  a = tf.cast(tf.convert_to_tensor(a), tf.float64).numpy()
  b = tf.cast(tf.convert_to_tensor(b), tf.float64).numpy()
  if relative_to_norm:
    assert np.linalg.norm(a - b) <= tolerance * max(np.linalg.norm(b), 0.01), what
  else:
    np.testing.assert_allclose(a, b, rtol=tolerance, atol=tolerance * max(1.0, np.abs(b).max()),
                               err_msg=what)


def _assert_kernels_agree(kind, dtype, training, jit_compile):
  """Same weights in, same outputs, loss and gradients out, fused and keras."""
  fused = _build(kind, "fused", dtype)
  stock = _build(kind, "keras", dtype)
  assert [(w.name, w.shape) for w in stock.weights] == [(w.name, w.shape) for w in fused.weights]
  stock.set_weights(fused.get_weights())
  (out_fused, loss_fused, grads_fused), (out_stock, loss_stock, grads_stock) = [
      _run(model, kind, kernels, training, jit_compile)
      for model, kernels in ((fused, "fused"), (stock, "keras"))]
  tolerance, by_norm = TOLERANCES[dtype], dtype != "float32"
  flat_fused, flat_stock = tf.nest.flatten(out_fused), tf.nest.flatten(out_stock)
  assert [t.dtype for t in flat_fused] == [t.dtype for t in flat_stock]
  for i, (a, b) in enumerate(zip(flat_fused, flat_stock)):
    _assert_close(a, b, tolerance, by_norm, f"output {i}")
  _assert_close(loss_fused, loss_stock, tolerance, by_norm, "loss")
  assert len(grads_fused) == len(fused.trainable_variables)
  for variable, a, b in zip(fused.trainable_variables, grads_fused, grads_stock):
    _assert_close(a, b, tolerance, by_norm, f"gradient of {variable.name}")


@pytest.mark.parametrize("kind", ["encoder", "pretraining", "classifier"])
@pytest.mark.parametrize("dtype", ["float32", "mixed_bfloat16"])
@pytest.mark.parametrize("training", [True, False])
def test_both_kernels_compute_the_same(kind, dtype, training):
  """training=True runs the fused path's compiled GELU, False its plain-op GELU."""
  _assert_kernels_agree(kind, dtype, training, jit_compile=False)


@pytest.mark.parametrize("dtype", ["float32", "mixed_bfloat16"])
def test_both_kernels_compute_the_same_under_xla(dtype):
  """The pre-training step jit-compiled, as training runs it."""
  _assert_kernels_agree("pretraining", dtype, training=True, jit_compile=True)


def test_losses_agree():
  rng = np.random.default_rng(4)
  logits = tf.constant(rng.normal(scale=3.0, size=(2, 5, 40)), tf.float32)
  ids = rng.integers(0, 40, (2, 5)).astype(np.int32)
  weights = np.array([[1, 1, 1, 0, 0], [1, 0, 0, 0, 0]], np.float32)
  nsp_logits = tf.constant(rng.normal(size=(2, 2)), tf.float32)
  nsp_labels = np.array([[1], [0]], np.int32)
  for fused, stock in (
      (modeling.masked_lm_loss(logits, ids, weights),
       modeling.masked_lm_loss(logits, ids, weights, kernels="keras")),
      (modeling.next_sentence_loss(nsp_logits, nsp_labels),
       modeling.next_sentence_loss(nsp_logits, nsp_labels, kernels="keras"))):
    for a, b in zip(fused, stock):
      assert a.dtype == b.dtype and a.shape == b.shape
      np.testing.assert_allclose(a, b, rtol=1e-6)


def _graph_nodes(function, *args):
  graph_def = function.get_concrete_function(*args).graph.as_graph_def()
  return list(graph_def.node) + [n for f in graph_def.library.function for n in f.node_def]


def _layers(model):
  return [m for m in model.submodules if isinstance(m, tf_keras.layers.Layer)]


@pytest.mark.parametrize("kernels", modeling.KERNELS)
def test_keras_kernels_use_only_stock_pieces(kernels):
  """kernels="keras": Keras' layers, no hand-written gradient, no compiled kernel;
  kernels="fused": ours (what the check finds when they are there)."""
  config = CONFIG.replace(hidden_dropout_prob=0.1)
  model = modeling.build_pretraining_model(config, max_predictions_per_seq=PREDICTIONS,
                                           kernels=kernels)
  ours = (MatmulDense, Dropout, LayerNorm)
  stock = (tf_keras.layers.Dense, tf_keras.layers.Dropout, tf_keras.layers.LayerNormalization)
  types = {type(layer) for layer in _layers(model)}
  assert types >= set(ours if kernels == "fused" else stock)
  assert not types & set(stock if kernels == "fused" else ours)
  features, labels = _features()

  @tf.function
  def train_step(features):
    with tf.GradientTape() as tape:
      loss = modeling.pretraining_loss(model(features, training=True), labels,
                                       kernels=kernels)["total_loss"]
    return tape.gradient(loss, model.trainable_variables)
  nodes = _graph_nodes(train_step, features)
  custom_gradients = [n.name for n in nodes if "_gradient_op_type" in n.attr]
  compiled = [n.name for n in nodes if n.attr["_XlaMustCompile"].b]
  if kernels == "keras":
    assert not custom_gradients and not compiled
  else:
    assert custom_gradients and compiled


def test_activations_keras_kernels_are_plain_ops():
  """kernels="keras" trains with TensorFlow's plain GELUs, the functions inference uses;
  the fused kernels train with compiled ones."""
  for name, plain in (("gelu", activations.gelu_tanh), ("gelu_exact", activations.gelu_exact)):
    for training in (False, True):
      assert activations.get(name, training=training, kernels="keras") is plain
    assert activations.get(name, training=False) is plain
    assert activations.get(name, training=True) is not plain
  assert activations.get("relu", kernels="keras") is tf.nn.relu


@pytest.mark.parametrize("build", [
    lambda k: modeling.build_encoder(CONFIG, kernels=k),
    lambda k: modeling.build_pretraining_model(CONFIG, kernels=k),
    lambda k: modeling.build_classifier(CONFIG, 2, kernels=k),
    lambda k: modeling.masked_lm_loss(tf.zeros([1, 1, 3]), [[0]], [[1.0]], kernels=k),
    lambda k: modeling.next_sentence_loss(tf.zeros([1, 2]), [0], kernels=k),
    lambda k: modeling.pretraining_loss(
        {"masked_lm_logits": tf.zeros([1, 1, 3]), "next_sentence_logits": tf.zeros([1, 2])},
        {"masked_lm_ids": [[0]], "masked_lm_weights": [[1.0]], "next_sentence_labels": [0]},
        kernels=k),
    lambda k: losses.sparse_softmax_cross_entropy(tf.zeros([1, 2]), [0], kernels=k),
    lambda k: activations.get("gelu", kernels=k),
    lambda k: TransformerLayer(2, 4, 8, "gelu", 0.1, 0.1, 0.02, kernels=k),
    lambda k: OutputProjection(2, 0.02, kernels=k),
])
@pytest.mark.parametrize("kernels", ["xla", "Keras", None])
def test_invalid_kernels_name_the_allowed_values(build, kernels):
  assert modeling.KERNELS == ("fused", "keras")
  with pytest.raises(ValueError, match=f"kernels must be one of 'fused', 'keras', got {kernels!r}"):
    build(kernels)


@pytest.mark.parametrize("layer", [
    lambda k: BertEmbeddings(99, 32, 64, 2, 0.1, 0.02, kernels=k),
    lambda k: SelfAttention(4, 8, 0.1, 0.02, kernels=k),
    lambda k: TransformerLayer(4, 8, 37, "gelu", 0.1, 0.1, 0.02, kernels=k),
    lambda k: OutputProjection(2, 0.02, kernels=k),
])
def test_layers_keep_kernels_in_their_config(layer):
  for kernels in modeling.KERNELS:
    config = layer(kernels).get_config()
    assert config["kernels"] == kernels
    assert type(layer(kernels)).from_config(config).kernels == kernels


@pytest.mark.parametrize("kernels", modeling.KERNELS)
def test_encoder_takes_training_as_a_tensor(kernels):
  """One trace serves training=True (dropout on) and False (the inference output)."""
  encoder = modeling.build_encoder(CONFIG.replace(hidden_dropout_prob=0.3), kernels=kernels)
  features = {name: value for name, value in _features()[0].items()
              if name in modeling.INPUT_NAMES}
  run = tf.function(lambda f, training: encoder(f, training=training)["sequence_output"])
  inference = encoder(features, training=False)["sequence_output"]
  np.testing.assert_allclose(run(features, tf.constant(False)), inference, atol=1e-6)
  assert np.abs(run(features, tf.constant(True)) - inference).max() > 1e-2
  assert run.experimental_get_tracing_count() == 1
