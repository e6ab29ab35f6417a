"""The kernel family (`modeling.kernels`): "fused" (our CPU-tuned pieces) and "keras" (stock
pieces) build the same variables and compute the same outputs, losses and gradients; "auto"
picks by device; a model keeps the family it was built with."""

import functools

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import modeling
from modeling import activations, losses
from modeling.kernels import FAMILIES, current_kernels, kernels_scope, resolve_kernels, set_kernels
from modeling.layers import Dropout, MatmulDense
from modeling.layers.normalization import LayerNorm
from tests.tiny_models import pretraining_loss

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


def _build(kind, dtype):
  if kind == "encoder":
    return modeling.build_encoder(CONFIG, outputs="all_layers", dtype=dtype)
  if kind == "pretraining":
    return modeling.build_pretraining_model(CONFIG, max_predictions_per_seq=PREDICTIONS,
                                            outputs="positions", dtype=dtype)
  return modeling.build_classifier(CONFIG, LABELS, dtype=dtype, dropout_rate=0.0)


def _loss(kind, outputs, labels, upstream):
  """A scalar that every output feeds: the model's own loss where it has one. The
  encoder's is a sum of squares: a sum of terms of both signs can cancel to almost
  nothing (the weights are random), where float32 rounding is no longer relatively small."""
  if kind == "encoder":
    return (tf.reduce_sum(tf.square(tf.cast(outputs["sequence_output"], tf.float32) - upstream))
            + tf.reduce_sum(tf.square(tf.cast(outputs["pooled_output"], tf.float32))))
  if kind == "pretraining":
    return pretraining_loss(outputs, labels)["total_loss"]
  per_example, _ = losses.sparse_softmax_cross_entropy(outputs, labels["label_ids"])
  return tf.reduce_mean(per_example)


def _run(model, kind, training, jit_compile):
  features, labels = _features()
  features = {name: features[name] for name in model.input_names}
  upstream = tf.constant(np.random.default_rng(1).normal(size=(BATCH, SEQ, 32)), tf.float32)

  @tf.function(jit_compile=jit_compile)
  def step(features):
    with tf.GradientTape() as tape:
      outputs = model(features, training=training)
      loss = _loss(kind, outputs, labels, upstream)
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


@functools.lru_cache(maxsize=None)
def _models(kind, dtype):
  """{family: model} of one kind, each built under its family, with the same weights. Built
  once per module and shared by the cases that run it (a step computes gradients but applies
  none, so no case changes them)."""
  models = {}
  for family in FAMILIES:
    with kernels_scope(family):
      models[family] = _build(kind, dtype)
  fused, stock = models["fused"], models["keras"]
  assert [(w.name, w.shape) for w in stock.weights] == [(w.name, w.shape) for w in fused.weights]
  stock.set_weights(fused.get_weights())
  return models


def _assert_kernels_agree(kind, dtype, training, jit_compile):
  """Same weights in, same outputs, loss and gradients out, fused and keras (each model
  built and run, its loss included, under its family)."""
  models, results = _models(kind, dtype), {}
  fused = models["fused"]
  for family, model in models.items():
    with kernels_scope(family):
      results[family] = _run(model, kind, training, jit_compile)
  (out_fused, loss_fused, grads_fused), (out_stock, loss_stock, grads_stock) = (
      results["fused"], results["keras"])
  tolerance, by_norm = TOLERANCES[dtype], dtype != "float32"
  flat_fused, flat_stock = tf.nest.flatten(out_fused), tf.nest.flatten(out_stock)
  assert [t.dtype for t in flat_fused] == [t.dtype for t in flat_stock]
  for i, (a, b) in enumerate(zip(flat_fused, flat_stock)):
    _assert_close(a, b, tolerance, by_norm, f"output {i}")
  _assert_close(loss_fused, loss_stock, tolerance, by_norm, "loss")
  assert len(grads_fused) == len(fused.trainable_variables)
  for variable, a, b in zip(fused.trainable_variables, grads_fused, grads_stock):
    _assert_close(a, b, tolerance, by_norm, f"gradient of {variable.name}")


@pytest.mark.parametrize("kind, training", [
    ("encoder", True), ("encoder", False), ("pretraining", True), ("classifier", True)])
@pytest.mark.parametrize("dtype", ["float32", "mixed_bfloat16"])
def test_both_kernels_compute_the_same(kind, dtype, training):
  """training=True runs the fused path's compiled GELU, False its plain-op GELU. Only the
  transformer layers read `training` (the heads run the same ops either way, and dropout is
  off): the encoder's per-layer outputs check both."""
  _assert_kernels_agree(kind, dtype, training, jit_compile=False)


@pytest.mark.slow
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
  computed = {}
  for family in FAMILIES:
    with kernels_scope(family):
      computed[family] = (modeling.masked_lm_loss(logits, ids, weights),
                          modeling.next_sentence_loss(nsp_logits, nsp_labels))
  for fused, stock in zip(computed["fused"], computed["keras"]):
    for a, b in zip(fused, stock):
      assert a.dtype == b.dtype and a.shape == b.shape
      np.testing.assert_allclose(a, b, rtol=1e-6)


def _graph_nodes(function, *args):
  graph_def = function.get_concrete_function(*args).graph.as_graph_def()
  return list(graph_def.node) + [n for f in graph_def.library.function for n in f.node_def]


def _layers(model):
  return [m for m in model.submodules if isinstance(m, tf_keras.layers.Layer)]


def _train_step_graph(model, features, labels, loss):
  """The nodes of a traced training step of `model` on `loss(outputs, labels)`."""
  @tf.function
  def train_step(features):
    with tf.GradientTape() as tape:
      total = loss(model(features, training=True), labels)
    return tape.gradient(total, model.trainable_variables)
  nodes = _graph_nodes(train_step, features)
  custom_gradients = [n.name for n in nodes if "_gradient_op_type" in n.attr]
  compiled = [n.name for n in nodes if n.attr["_XlaMustCompile"].b]
  return custom_gradients, compiled


def _pretraining_model():
  return modeling.build_pretraining_model(CONFIG.replace(hidden_dropout_prob=0.1),
                                          max_predictions_per_seq=PREDICTIONS)


@pytest.mark.parametrize("kernels", FAMILIES)
def test_keras_kernels_use_only_stock_pieces(kernels):
  """"keras": Keras' layers, no hand-written gradient, no compiled kernel;
  "fused": ours (what the check finds when they are there)."""
  with kernels_scope(kernels):
    model = _pretraining_model()
    ours = (MatmulDense, Dropout, LayerNorm)
    stock = (tf_keras.layers.Dense, tf_keras.layers.Dropout, tf_keras.layers.LayerNormalization)
    types = {type(layer) for layer in _layers(model)}
    assert types >= set(ours if kernels == "fused" else stock)
    assert not types & set(stock if kernels == "fused" else ours)
    features, labels = _features()
    custom_gradients, compiled = _train_step_graph(
        model, features, labels, lambda out, labels: pretraining_loss(out, labels)["total_loss"])
  if kernels == "keras":
    assert not custom_gradients and not compiled
  else:
    assert custom_gradients and compiled


@pytest.mark.parametrize("built, traced", [("keras", "fused"), ("fused", "keras")])
def test_a_model_keeps_the_family_it_was_built_with(built, traced):
  """The family is read when layers are built: traced under the other one (as a model
  built in a scope and trained after it), the model still runs its own."""
  with kernels_scope(built):
    model = _pretraining_model()
  assert {layer.kernels for layer in _layers(model) if hasattr(layer, "kernels")} == {built}
  features, labels = _features()
  with kernels_scope(traced):
    custom_gradients, compiled = _train_step_graph(
        model, features, labels,
        lambda out, _: tf.reduce_sum(out["masked_lm_logits"]) + tf.reduce_sum(
            out["next_sentence_logits"]))
  assert bool(custom_gradients) == bool(compiled) == (built == "fused")


def test_activations_compiled_only_when_asked():
  """The fused kernels train with compiled GELUs; "keras" and inference use TensorFlow's
  plain ones (`TransformerLayer` asks for compiled=True only for fused training)."""
  for name, plain in (("gelu", activations.gelu_tanh), ("gelu_exact", activations.gelu_exact)):
    assert activations.get(name) is plain
    assert activations.get(name, compiled=True) is not plain
  assert activations.get("relu", compiled=True) is tf.nn.relu


# Device names as strategies list them (`strategy.extended.worker_devices`) and as
# `tf.config.list_logical_devices` names them.
CPU = "/job:localhost/replica:0/task:0/device:CPU:0"
CPU_1 = "/job:localhost/replica:0/task:0/device:CPU:1"
GPU = "/job:localhost/replica:0/task:0/device:GPU:0"
TPU = "/job:worker/replica:0/task:0/device:TPU:0"
WORKER_CPU = "/job:worker/task:1/device:CPU:0"


@pytest.mark.parametrize("devices, family", [
    ([CPU], "fused"),
    ([CPU, CPU_1], "fused"),
    ([WORKER_CPU], "fused"),
    ([GPU], "keras"),
    ([GPU, GPU.replace("GPU:0", "GPU:1")], "keras"),
    ([CPU, GPU], "keras"),
    ([TPU, TPU.replace("TPU:0", "TPU:1")], "keras"),
])
def test_auto_is_fused_on_cpus_keras_on_gpus_and_tpus(devices, family):
  assert resolve_kernels("auto", devices) == family
  for chosen in FAMILIES:
    assert resolve_kernels(chosen, devices) == chosen


def test_auto_reads_this_processs_devices_by_default(monkeypatch):
  """Without devices, "auto" reads `tf.config.list_logical_devices` (this host: CPUs)."""
  assert resolve_kernels("auto") == "fused"
  gpu = tf.config.LogicalDevice(name=GPU, device_type="GPU")
  monkeypatch.setattr(tf.config, "list_logical_devices", lambda: [gpu])
  assert resolve_kernels("auto") == "keras"


def test_the_setting_is_auto_until_set_and_scopes_restore_it():
  assert current_kernels() == "fused"  # "auto" on this CPU-only host
  with kernels_scope("keras") as family:
    assert family == current_kernels() == "keras"
    with kernels_scope("auto", [TPU]) as inner:
      assert inner == current_kernels() == "keras"
    with kernels_scope("fused"):
      assert current_kernels() == "fused"
    assert current_kernels() == "keras"
  assert current_kernels() == "fused"
  try:
    assert set_kernels("keras") == current_kernels() == "keras"
  finally:
    set_kernels("auto")
  assert current_kernels() == "fused"


@pytest.mark.parametrize("kernels", ["xla", "Keras", None])
def test_invalid_kernels_name_the_allowed_values(kernels):
  assert modeling.KERNELS == ("auto", "fused", "keras")
  message = f"kernels must be one of 'auto', 'fused', 'keras', got {kernels!r}"
  for choose in (set_kernels, resolve_kernels, lambda k: kernels_scope(k).__enter__()):
    with pytest.raises(ValueError, match=message):
      choose(kernels)
  assert current_kernels() == "fused"


@pytest.mark.parametrize("kernels", FAMILIES)
def test_encoder_takes_training_as_a_tensor(kernels):
  """One trace serves training=True (dropout on) and False (the inference output)."""
  with kernels_scope(kernels):
    encoder = modeling.build_encoder(CONFIG.replace(hidden_dropout_prob=0.3))
  features = {name: value for name, value in _features()[0].items()
              if name in modeling.INPUT_NAMES}
  run = tf.function(lambda f, training: encoder(f, training=training)["sequence_output"])
  inference = encoder(features, training=False)["sequence_output"]
  np.testing.assert_allclose(run(features, tf.constant(False)), inference, atol=1e-6)
  assert np.abs(run(features, tf.constant(True)) - inference).max() > 1e-2
  assert run.experimental_get_tracing_count() == 1
