"""The model: config, activations, encoder structure, heads, classifier, parameter counts."""

import json
import math

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import modeling
from modeling import activations, losses
from modeling.layers import Dropout
from modeling.params import count_model_parameters, count_parameters, main as params_main

TINY = modeling.BertConfig(vocab_size=99, hidden_size=32, num_hidden_layers=2,
                           num_attention_heads=4, intermediate_size=37, type_vocab_size=2,
                           max_position_embeddings=64)


def _inputs(batch=3, seq=16, vocab=99, seed=0):
  rng = np.random.default_rng(seed)
  lengths = rng.integers(3, seq + 1, size=batch)
  mask = (np.arange(seq)[None, :] < lengths[:, None]).astype(np.int32)
  ids = rng.integers(1, vocab, size=(batch, seq)).astype(np.int32) * mask
  segments = ((np.arange(seq)[None, :] >= lengths[:, None] // 2) * mask).astype(np.int32)
  return {"input_ids": ids, "input_mask": mask, "segment_ids": segments}


# --- BertConfig -------------------------------------------------------------------------------

def test_config_json_round_trip_has_googles_keys(tmp_path):
  path = tmp_path / "bert_config.json"
  path.write_text(TINY.to_json_string())
  data = json.loads(path.read_text())
  assert sorted(data) == sorted([
      "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
      "intermediate_size", "hidden_act", "hidden_dropout_prob", "attention_probs_dropout_prob",
      "max_position_embeddings", "type_vocab_size", "initializer_range"])
  assert modeling.BertConfig.from_json_file(path) == TINY
  assert [p.name for p in tmp_path.iterdir()] == ["bert_config.json"]  # no temp file left


def test_config_reads_googles_fixture(shared_dir):
  config = modeling.BertConfig.from_json_file(
      shared_dir / "fixtures" / "google_bert_tiny" / "bert_config.json")
  assert (config.vocab_size, config.hidden_size, config.num_hidden_layers) == (30522, 128, 2)
  assert config.hidden_act == "gelu" and config.type_vocab_size == 2


def test_config_defaults_and_extra_keys_as_google():
  config = modeling.BertConfig.from_dict({"vocab_size": 10, "directionality": "bidi"})
  assert config.hidden_size == 768 and config.type_vocab_size == 16


@pytest.mark.parametrize("values, message", [
    ({"vocab_size": 10, "hidden_size": 100, "num_attention_heads": 12},
     r"hidden_size \(100\) is not a multiple of num_attention_heads \(12\)"),
    ({"vocab_size": 0}, "vocab_size must be a positive integer, got 0"),
    ({"vocab_size": 10, "hidden_act": "gleu"}, "hidden_act must be one of .* got 'gleu'"),
    ({"vocab_size": 10, "hidden_dropout_prob": 1.5}, r"hidden_dropout_prob must be a number in"),
    ({"hidden_size": 10}, "missing required key 'vocab_size'"),
    ([1, 2], "expected a JSON object"),
])
def test_config_validation_errors(values, message):
  with pytest.raises(modeling.ConfigError, match=message):
    modeling.BertConfig.from_dict(values)


def test_malformed_config_file_names_file_and_line(tmp_path):
  path = tmp_path / "bert_config.json"
  path.write_text('{\n  "vocab_size": 10,\n  "hidden_size": \n}\n')
  with pytest.raises(modeling.ConfigError, match=r"bert_config.json: not valid JSON \(line 4"):
    modeling.BertConfig.from_json_file(path)
  with pytest.raises(modeling.ConfigError, match="cannot read BERT config .*missing.json"):
    modeling.BertConfig.from_json_file(tmp_path / "missing.json")


def test_presets():
  sizes = {name: (c.num_hidden_layers, c.hidden_size, c.num_attention_heads, c.intermediate_size)
           for name in modeling.PRESETS for c in [modeling.BertConfig.preset(name)]}
  assert sizes == {"tiny": (2, 128, 2, 512), "mini": (4, 256, 4, 1024),
                   "small": (4, 512, 8, 2048), "medium": (8, 512, 8, 2048),
                   "base": (12, 768, 12, 3072), "large": (24, 1024, 16, 4096)}
  with pytest.raises(modeling.ConfigError, match="unknown preset 'huge'"):
    modeling.BertConfig.preset("huge")


# --- activations ------------------------------------------------------------------------------

def test_gelu_meanings():
  x = tf.constant([-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0])
  exact = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.numpy()])
  tanh = np.array([0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)))
                   for v in x.numpy()])
  assert np.abs(activations.get("gelu_exact")(x).numpy() - exact).max() < 1e-6
  for name in ("gelu", "gelu_tanh", "gelu_new"):
    assert np.abs(activations.get(name)(x).numpy() - tanh).max() < 1e-6
  assert np.abs(exact - tanh).max() > 1e-4  # the two really differ
  assert activations.from_huggingface_name("gelu") == "gelu_exact"
  assert activations.from_huggingface_name("gelu_new") == "gelu_tanh"
  assert activations.from_huggingface_name("silu") == "swish"
  np.testing.assert_allclose(activations.get("swish")(x).numpy(),
                             x.numpy() / (1 + np.exp(-x.numpy())), rtol=1e-6)
  with pytest.raises(ValueError, match="unsupported HuggingFace hidden_act 'foo'"):
    activations.from_huggingface_name("foo")


def _gelu_tanh_reference(x):
  """The tanh GELU and its analytic derivative, in float64 numpy."""
  k, c = math.sqrt(2 / math.pi), 0.044715
  t = np.tanh(k * (x + c * x ** 3))
  return 0.5 * x * (1 + t), 0.5 * (1 + t) + 0.5 * x * (1 - t ** 2) * k * (1 + 3 * c * x ** 2)


def test_gelu_tanh_gradient_is_the_formulas_derivative():
  """The hand-written gradient equals the analytic derivative in float64, float32, bfloat16."""
  x = np.linspace(-6.0, 6.0, 241)
  _, expected = _gelu_tanh_reference(x)
  # float32 saturates tanh to -1 below x = -4.9 (gradient 0 instead of ~-4e-6).
  for dtype, tolerance in ((tf.float64, 1e-12), (tf.float32, 1e-5), (tf.bfloat16, 2e-2)):
    xt = tf.constant(x, dtype)
    with tf.GradientTape() as tape:
      tape.watch(xt)
      y = activations.gelu_tanh(xt)
    grad = tape.gradient(y, xt)
    assert grad.dtype == dtype
    np.testing.assert_allclose(tf.cast(grad, tf.float64).numpy(), expected, atol=tolerance)


@pytest.mark.parametrize("dtype,tolerance", [(tf.float64, 1e-8), (tf.float32, 1e-5),
                                             (tf.bfloat16, 2e-2)])
def test_compiled_gelus_values_and_gradients(dtype, tolerance):
  """The XLA-kernel GELUs used in training against the formulas and their derivatives
  (XLA's float64 exp is good to ~6e-9 here, hence not 1e-12)."""
  x = np.linspace(-6.0, 6.0, 241)
  cdf = 0.5 * (1 + np.array([math.erf(v / math.sqrt(2)) for v in x]))
  pdf = np.exp(-0.5 * x ** 2) / math.sqrt(2 * math.pi)
  expected = {
      activations.gelu_tanh_compiled: _gelu_tanh_reference(x),
      activations.gelu_exact_compiled: (x * cdf, cdf + x * pdf),
  }
  for function, (value, derivative) in expected.items():
    xt = tf.constant(x, dtype)
    with tf.GradientTape() as tape:
      tape.watch(xt)
      y = function(xt)
    grad = tape.gradient(y, xt)
    assert y.dtype == dtype and grad.dtype == dtype
    np.testing.assert_allclose(tf.cast(y, tf.float64).numpy(), value, atol=tolerance * 6,
                               rtol=tolerance)
    np.testing.assert_allclose(tf.cast(grad, tf.float64).numpy(), derivative, atol=tolerance)
  for name in ("gelu", "gelu_tanh", "gelu_new"):
    assert activations.get(name, training=True) is activations.gelu_tanh_compiled
  assert activations.get("gelu_exact", training=True) is activations.gelu_exact_compiled
  assert activations.get("relu", training=True) is tf.nn.relu
  assert activations.get("linear", training=True) is None


def test_layer_norm_matches_keras_forward_and_gradients():
  """Our LayerNorm (hand-written gradient) against Keras' LayerNormalization, same weights."""
  from modeling.layers import layer_norm  # pylint: disable=import-outside-toplevel
  rng = np.random.default_rng(3)
  x = tf.constant(rng.normal(2.0, 3.0, size=(2, 5, 16)), tf.float32)
  ours = layer_norm("LayerNorm", "fused")
  reference = tf_keras.layers.LayerNormalization(epsilon=1e-12)
  for layer in (ours, reference):
    layer.build(x.shape)
    layer.gamma.assign(rng.normal(1.0, 0.5, 16))
    layer.beta.assign(rng.normal(0.0, 0.5, 16))
  reference.set_weights(ours.get_weights())
  assert [w.name.split("/")[-1] for w in ours.weights] == ["gamma:0", "beta:0"]
  upstream = tf.constant(rng.normal(size=(2, 5, 16)), tf.float32)
  results = []
  for layer in (ours, reference):
    with tf.GradientTape() as tape:
      tape.watch(x)
      y = layer(x)
      loss = tf.reduce_sum(y * upstream)
    results.append([y, *tape.gradient(loss, [x, layer.gamma, layer.beta])])
  for a, b in zip(*results):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
  assert ours(tf.cast(x, tf.bfloat16)).dtype == tf.float32  # computes in float32


@pytest.mark.parametrize("jit_compile", [False, True])
@pytest.mark.parametrize("policy, tolerance", [("float32", 1e-5), ("mixed_bfloat16", 5e-2)])
def test_dense_matches_keras_forward_and_gradients(jit_compile, policy, tolerance):
  """MatmulDense (2-D matmul, bias gradient as a matrix product) against Keras' Dense:
  same weight names, outputs and gradients for a 3-D input, plain and XLA-compiled."""
  from modeling.layers import MatmulDense  # pylint: disable=import-outside-toplevel
  rng = np.random.default_rng(5)
  x = tf.constant(rng.normal(size=(3, 7, 16)), tf.float32)
  upstream = tf.constant(rng.normal(size=(3, 7, 24)), tf.float32)
  ours = MatmulDense(24, activation="tanh", name="dense", dtype=policy)
  reference = tf_keras.layers.Dense(24, activation="tanh", name="dense", dtype=policy)
  for layer in (ours, reference):
    layer.build(x.shape)
  reference.set_weights([rng.normal(size=(16, 24)), rng.normal(size=24)])
  ours.set_weights(reference.get_weights())
  assert [w.name for w in ours.weights] == ["kernel:0", "bias:0"]

  def forward_and_gradients(layer):
    with tf.GradientTape() as tape:
      tape.watch(x)
      y = layer(x)
      loss = tf.reduce_sum(tf.cast(y, tf.float32) * upstream)
    return [y, *tape.gradient(loss, [x, layer.kernel, layer.bias])]
  results = [tf.function(forward_and_gradients, jit_compile=jit_compile)(layer)
             for layer in (ours, reference)]
  assert results[0][0].shape == (3, 7, 24) and results[0][0].dtype == results[1][0].dtype
  for a, b in zip(*results):
    np.testing.assert_allclose(tf.cast(a, tf.float32), tf.cast(b, tf.float32),
                               rtol=tolerance, atol=tolerance)
  # The bias gradient is the column sum of the upstream gradient through tanh.
  y32 = np.tanh(x.numpy().reshape(-1, 16) @ reference.kernel.numpy() + reference.bias.numpy())
  expected = ((1 - y32 ** 2) * upstream.numpy().reshape(-1, 24)).sum(axis=0)
  if policy == "float32":
    np.testing.assert_allclose(results[0][3], expected, rtol=1e-4, atol=1e-4)

# --- encoder ----------------------------------------------------------------------------------

def test_encoder_outputs_and_mask():
  encoder = modeling.build_encoder(TINY, return_all_layers=True)
  assert encoder.input_names == ["input_ids", "input_mask", "segment_ids"]
  feats = _inputs()
  out = encoder(feats)
  assert out["sequence_output"].shape == (3, 16, 32)
  assert out["pooled_output"].shape == (3, 32)
  assert out["embedding_output"].shape == (3, 16, 32)
  assert len(out["encoder_outputs"]) == 2
  np.testing.assert_array_equal(out["encoder_outputs"][-1], out["sequence_output"])
  # The pooler is tanh(dense(first token)).
  pooler = encoder.get_layer("pooler")
  expected = np.tanh(out["sequence_output"][:, 0] @ pooler.kernel.numpy() + pooler.bias.numpy())
  np.testing.assert_allclose(out["pooled_output"], expected, atol=1e-6)
  # Padding keys are masked: changing ids under padding leaves real tokens unchanged.
  changed = dict(feats, input_ids=np.where(feats["input_mask"] == 1, feats["input_ids"], 7))
  out2 = encoder(changed)
  real = feats["input_mask"].astype(bool)
  np.testing.assert_allclose(out2["sequence_output"].numpy()[real],
                             out["sequence_output"].numpy()[real], atol=1e-5)
  # Dropout is only active in training.
  train = encoder(feats, training=True)["sequence_output"].numpy()
  assert np.abs(train - out["sequence_output"].numpy()).max() > 1e-3


def test_initializers_as_google():
  config = modeling.BertConfig.preset("mini", vocab_size=1000)
  encoder = modeling.build_encoder(config)
  emb = encoder.get_layer("embeddings").word_embeddings.numpy()
  assert abs(emb.std() - 0.02 * 0.88) < 0.002  # truncated at 2 stddev: std ~0.88 * 0.02
  assert np.abs(emb).max() <= 0.04 + 1e-7
  layer = encoder.get_layer("layer_0")
  q, k = layer.attention.query.kernel.numpy(), layer.attention.key.kernel.numpy()
  assert not np.allclose(q, k)  # every weight draws its own values
  assert np.all(layer.attention.query.bias.numpy() == 0)
  assert np.all(layer.output_layer_norm.gamma.numpy() == 1)


def test_xla_matches_eager():
  encoder = modeling.build_encoder(TINY)
  feats = _inputs()
  eager = encoder(feats)["sequence_output"].numpy()
  xla = tf.function(lambda f: encoder(f)["sequence_output"], jit_compile=True)(feats).numpy()
  np.testing.assert_allclose(xla, eager, atol=1e-5)


def _graph_nodes(concrete_function):
  """Every node of a traced function, its nested functions' included."""
  graph_def = concrete_function.graph.as_graph_def()
  yield from graph_def.node
  for function in graph_def.library.function:
    yield from function.node_def


def test_training_graph_uses_compiled_kernels_and_no_variable_gather():
  """Training runs the GELU as XLA kernels, inference as plain ops (what SavedModels hold);
  the embedding rows come from the tables' values, never a ResourceGather (which would put
  the word table in copy-on-read mode: every read and update would copy it whole)."""
  config = TINY.replace(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
  model = modeling.build_pretraining_model(config, max_predictions_per_seq=2,
                                           masked_positions_only=True)
  features = dict(_inputs(), masked_lm_positions=np.array([[1, 2]] * 3, np.int32))

  @tf.function
  def train_step(features):
    with tf.GradientTape() as tape:
      loss = tf.reduce_sum(model(features, training=True)["masked_lm_logits"])
    return tape.gradient(loss, model.trainable_variables)

  @tf.function
  def predict(features, training):
    return model(features, training=training)["masked_lm_logits"]

  def op_types(function, *args):
    return [node.op for node in _graph_nodes(function.get_concrete_function(*args))]

  def compiled_calls(function, *args):
    return [node.name for node in _graph_nodes(function.get_concrete_function(*args))
            if node.attr["_XlaMustCompile"].b]

  assert "ResourceGather" not in op_types(train_step, features)
  assert len(compiled_calls(predict, features, True)) == config.num_hidden_layers
  assert len(compiled_calls(train_step, features)) == 2 * config.num_hidden_layers  # + backward
  assert not compiled_calls(predict, features, False)
  np.testing.assert_allclose(predict(features, True), predict(features, False), atol=1e-5)


def test_mixed_precision_policy():
  encoder32 = modeling.build_encoder(TINY)
  encoder16 = modeling.build_encoder(TINY, dtype="mixed_bfloat16")
  encoder16.set_weights(encoder32.get_weights())
  assert all(w.dtype == tf.float32 for w in encoder16.weights)
  feats = _inputs()
  out16 = encoder16(feats)["sequence_output"]
  assert out16.dtype == tf.bfloat16
  out32 = encoder32(feats)["sequence_output"].numpy()
  assert np.abs(out16.numpy().astype(np.float32) - out32).max() < 0.15
  model = modeling.build_pretraining_model(TINY, dtype="mixed_bfloat16")
  logits = model(dict(feats, masked_lm_positions=np.zeros([3, 2], np.int32)))
  assert logits["masked_lm_logits"].dtype == tf.float32


# --- heads and classifier ---------------------------------------------------------------------

def test_pretraining_heads_tie_decoder_and_use_googles_layout():
  model = modeling.build_pretraining_model(TINY)
  encoder = model.get_layer("bert")
  table = encoder.get_layer("embeddings").word_embeddings
  mlm = model.get_layer("cls_predictions")
  assert mlm.embedding_table is table
  assert model.get_layer("cls_seq_relationship").output_weights.shape == (2, 32)
  positions = np.array([[1, 2], [0, 0], [5, 3]], np.int32)
  out = model(dict(_inputs(), masked_lm_positions=positions))
  assert out["masked_lm_logits"].shape == (3, 2, 99)
  assert out["next_sentence_logits"].shape == (3, 2)
  # Tied weights are counted once.
  assert len({id(w) for w in model.weights}) == len(model.weights)


def test_masked_positions_only_gives_the_same_outputs_and_gradients():
  """The last layer computed at [CLS] + masked positions only: same logits, losses, gradients."""
  full = modeling.build_pretraining_model(TINY, max_predictions_per_seq=3)
  fast = modeling.build_pretraining_model(TINY, max_predictions_per_seq=3,
                                          masked_positions_only=True)
  assert [w.name for w in fast.weights] == [w.name for w in full.weights]
  fast.set_weights(full.get_weights())
  features = dict(_inputs(), masked_lm_positions=np.array([[1, 2, 2], [0, 7, 3], [5, 3, 1]],
                                                          np.int32))
  labels = dict(masked_lm_ids=np.array([[3, 4, 5], [6, 7, 8], [9, 10, 11]], np.int32),
                masked_lm_weights=np.array([[1, 1, 0], [1, 1, 1], [1, 0, 0]], np.float32),
                next_sentence_labels=np.array([[0], [1], [1]], np.int32))
  results = []
  for model in (full, fast):
    with tf.GradientTape() as tape:
      out = model(features)
      loss = modeling.pretraining_loss(out, labels)["total_loss"]
    results.append((out, loss, tape.gradient(loss, model.trainable_variables)))
  (out_full, loss_full, grads_full), (out_fast, loss_fast, grads_fast) = results
  assert out_fast["sequence_output"].shape == (3, 3, 32)  # the masked positions only
  np.testing.assert_allclose(
      out_fast["sequence_output"],
      tf.gather(out_full["sequence_output"], features["masked_lm_positions"], batch_dims=1),
      atol=1e-5)
  for key in ("masked_lm_logits", "next_sentence_logits", "pooled_output"):
    np.testing.assert_allclose(out_fast[key], out_full[key], atol=1e-5)
  np.testing.assert_allclose(loss_fast, loss_full, rtol=1e-6)
  for g_fast, g_full in zip(grads_fast, grads_full):
    np.testing.assert_allclose(tf.convert_to_tensor(g_fast), tf.convert_to_tensor(g_full),
                               atol=1e-6)
  with pytest.raises(ValueError, match="cannot return all layers"):
    modeling.build_pretraining_model(TINY, return_all_layers=True, masked_positions_only=True)

def test_losses_as_google():
  logits = tf.constant(np.random.default_rng(1).normal(size=(2, 3, 5)), tf.float32)
  ids = np.array([[1, 2, 0], [4, 0, 0]], np.int32)
  weights = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]], np.float32)
  loss, per_slot, predictions = modeling.masked_lm_loss(logits, ids, weights)
  log_probs = logits.numpy() - np.log(np.exp(logits.numpy()).sum(-1, keepdims=True))
  expected = -np.take_along_axis(log_probs, ids[..., None], -1)[..., 0]
  np.testing.assert_allclose(per_slot, expected, rtol=1e-6)
  np.testing.assert_array_equal(predictions, logits.numpy().argmax(-1))
  np.testing.assert_allclose(loss, (expected * weights).sum() / (weights.sum() + 1e-5),
                             rtol=1e-6)
  nsp_logits = tf.constant([[2.0, -1.0], [0.5, 0.25]])
  nsp, per_example, nsp_predictions = modeling.next_sentence_loss(nsp_logits,
                                                                  np.array([[0], [1]]))
  lp = nsp_logits.numpy() - np.log(np.exp(nsp_logits.numpy()).sum(-1, keepdims=True))
  np.testing.assert_allclose(per_example, [-lp[0, 0], -lp[1, 1]], rtol=1e-6)
  np.testing.assert_array_equal(nsp_predictions, [0, 0])
  np.testing.assert_allclose(nsp, per_example.numpy().mean(), rtol=1e-6)


@pytest.mark.parametrize("jit_compile", [False, True])
def test_cross_entropy_matches_tensorflows_values_and_gradients(jit_compile):
  rng = np.random.default_rng(2)
  logits = rng.normal(scale=4.0, size=(64, 1000)).astype(np.float32)
  labels = rng.integers(0, 1000, 64).astype(np.int32)
  logits[0, labels[0]] = -200.0  # p(label) ~ e^-200 underflows: -log p must not be inf
  logits[1, [3, 7]] = 50.0  # a tie for the maximum: the argmax is the first
  upstream = rng.normal(size=64).astype(np.float32)

  def loss_and_grad(fn, x):
    with tf.GradientTape() as tape:
      tape.watch(x)
      per_row, predictions = fn(x)
      total = tf.reduce_sum(per_row * upstream)
    return per_row, tape.gradient(total, x), predictions
  ours = tf.function(lambda x: loss_and_grad(
      lambda t: losses.sparse_softmax_cross_entropy(t, tf.constant(labels)), x),
      jit_compile=jit_compile)(tf.constant(logits))
  reference = loss_and_grad(lambda t: (tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels, t), tf.argmax(t, axis=-1, output_type=tf.int32)), tf.constant(logits))
  assert float(ours[0][0]) == pytest.approx(float(reference[0][0]), rel=1e-6)
  assert float(ours[0][0]) > 190.0
  np.testing.assert_allclose(ours[0], reference[0], rtol=2e-6, atol=1e-6)
  np.testing.assert_allclose(ours[1], reference[1], rtol=1e-5, atol=1e-7)
  np.testing.assert_array_equal(ours[2], reference[2])
  assert ours[2][1] == 3


@pytest.mark.parametrize("jit_compile", [False, True])  # the mask kernel alone / inlined
def test_dropout_drops_at_the_rate_and_scales_the_rest(jit_compile):
  layer = Dropout(0.1)
  apply = tf.function(lambda x: layer(x, training=True), jit_compile=jit_compile)
  y = apply(tf.ones([1000, 1000])).numpy()
  dropped = y == 0.0
  # 10^6 Bernoulli(0.1) draws: standard deviation 3e-4 of the fraction.
  assert dropped.mean() == pytest.approx(0.1, abs=2e-3)
  assert np.all(y[~dropped] == np.float32(1.0 / 0.9))
  # The two 16-bit halves of each 32-bit draw decide neighbours independently.
  both = dropped[:, 0::2] & dropped[:, 1::2]
  assert both.mean() == pytest.approx(0.01, abs=1.5e-3)
  # A new mask per call (per training step).
  assert not np.array_equal(dropped, apply(tf.ones([1000, 1000])).numpy() == 0.0)


@pytest.mark.parametrize("shape,policy", [([3, 7], "float32"), ([2, 5, 33], "mixed_bfloat16")])
def test_dropout_shapes_dtypes_and_gradient(shape, policy):
  layer = Dropout(0.5, dtype=policy)
  dtype = layer.compute_dtype
  x = tf.random.normal(shape, dtype=tf.float32) + 3.0  # no zeros in x
  x = tf.cast(x, dtype)
  weights = tf.cast(tf.random.normal(shape), dtype)
  with tf.GradientTape() as tape:
    tape.watch(x)
    y = layer(x, training=True)
    total = tf.reduce_sum(y * weights)
  grad = tape.gradient(total, x)
  assert y.shape == shape and y.dtype == dtype and grad.dtype == dtype
  kept = y.numpy() != 0
  assert 0 < kept.sum() < kept.size
  np.testing.assert_array_equal(y.numpy()[kept], (x.numpy() * 2)[kept])
  np.testing.assert_array_equal(grad.numpy(), np.where(kept, weights.numpy() * 2, 0))
  np.testing.assert_array_equal(layer(x, training=False), x)
  np.testing.assert_array_equal(Dropout(0.0)(x, training=True), x)
  with pytest.raises(ValueError, match="dropout rate"):
    Dropout(1.0)


@pytest.mark.parametrize("jit_compile", [False, True])
def test_dropout_takes_training_as_a_tensor(jit_compile):
  """`training` as a boolean tensor, as Keras' Dropout allows: one trace for both values."""
  layer = Dropout(0.5)

  @tf.function(jit_compile=jit_compile)
  def apply(x, training):
    with tf.GradientTape() as tape:
      tape.watch(x)
      y = layer(x, training=training)
      total = tf.reduce_sum(y)
    return y, tape.gradient(total, x)
  x = tf.ones([64, 64])
  y, grad = apply(x, tf.constant(True))
  kept = y.numpy() != 0
  assert 0.4 < kept.mean() < 0.6
  np.testing.assert_array_equal(y.numpy()[kept], 2.0)
  np.testing.assert_array_equal(grad, np.where(kept, 2.0, 0.0))
  y, grad = apply(x, tf.constant(False))
  np.testing.assert_array_equal(y, x)
  np.testing.assert_array_equal(grad, np.ones([64, 64]))
  assert apply.experimental_get_tracing_count() == 1
  assert 0 < (layer(x, training=tf.constant(True)).numpy() == 0).mean() < 1  # eager

@pytest.mark.parametrize("num_labels", [3, 1])
def test_classifier(num_labels):
  model = modeling.build_classifier(TINY, num_labels)
  head = model.get_layer("classifier")
  feats = _inputs()
  logits = model(feats)
  assert logits.shape == (3, num_labels) and logits.dtype == tf.float32
  pooled = model.get_layer("bert")(feats)["pooled_output"].numpy()
  expected = pooled @ head.output_weights.numpy().T + head.output_bias.numpy()
  np.testing.assert_allclose(logits, expected, atol=1e-5)
  assert head.output_weights.shape == (num_labels, 32)
  with pytest.raises(ValueError, match="num_labels must be >= 1"):
    modeling.build_classifier(TINY, 0)


# --- parameter accounting ---------------------------------------------------------------------

def test_parameter_counts_of_published_sizes():
  base = count_parameters(modeling.BertConfig.preset("base"))
  assert (base["embeddings"], base["layer"], base["pooler"], base["encoder"]) == (
      23_837_184, 7_087_872, 590_592, 109_482_240)
  assert count_parameters(modeling.BertConfig.preset("large"))["encoder"] == 335_141_888


def test_parameter_counts_agree_with_built_model():
  model = modeling.build_pretraining_model(TINY)
  counted = count_model_parameters(model)
  assert counted == count_parameters(TINY, heads=True)
  assert counted["total"] == sum(int(np.prod(w.shape)) for w in model.weights)
  classifier = modeling.build_classifier(TINY, 3)
  assert count_model_parameters(classifier)["classifier"] == 3 * 32 + 3


def test_params_cli(capsys):
  params_main(["--preset", "base"])
  out = capsys.readouterr().out
  assert "encoder                     109,482,240" in out
  assert "layer (each of 12)            7,087,872" in out
