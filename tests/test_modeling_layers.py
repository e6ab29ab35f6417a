"""Layers against Keras' (LayerNorm, MatmulDense: outputs and gradients), Dropout's rate,
scaling, masks, dtypes and `training` as a tensor, the GELU fused into its matmul at
inference, and token packing's helpers."""

import platform

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from modeling.layers import Dropout, MatmulDense, PackTokens, TransformerLayer, layer_norm
from modeling.kernels import kernels_scope
from modeling.layers import packing


def test_layer_norm_matches_keras_forward_and_gradients():
  """Our LayerNorm (hand-written gradient) against Keras' LayerNormalization, same weights."""
  rng = np.random.default_rng(3)
  x = tf.constant(rng.normal(2.0, 3.0, size=(2, 5, 16)), tf.float32)
  with kernels_scope("fused"):
    ours = layer_norm("LayerNorm")
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


@pytest.mark.skipif(platform.machine() != "x86_64", reason="oneDNN's fusions: x86 builds")
@pytest.mark.parametrize("hidden_act, gelu_op", [("gelu_exact", "Erf"), ("gelu_tanh", "Tanh")])
def test_inference_runs_the_gelu_inside_the_intermediate_matmul(hidden_act, gelu_op):
  """At inference the transformer layer's GELU is fused by TensorFlow's graph optimizer
  into the intermediate layer's matmul and bias: the graph it runs has no GELU op left
  (applied after the reshape to [batch, seq, units] it stayed, as separate passes). A
  oneDNN fusion: on with our scripts' setting (`cli.ONEDNN_ENV`), which conftest takes."""
  graph = tf.Graph()
  with graph.as_default():
    x = tf.compat.v1.placeholder(tf.float32, [2, 5, 16])
    mask = tf.ones([2, 5], tf.int32)
    with kernels_scope("fused"):  # MatmulDense applies the GELU to its rows
      layer = TransformerLayer(2, 8, 64, hidden_act, 0.1, 0.1, 0.02)
    y = layer((x, mask), training=False)
    with tf.compat.v1.Session(graph=graph) as session:
      session.run(tf.compat.v1.global_variables_initializer())
      metadata = tf.compat.v1.RunMetadata()
      session.run(y, {x: np.ones([2, 5, 16], np.float32)}, run_metadata=metadata,
                  options=tf.compat.v1.RunOptions(output_partition_graphs=True))
  ops = {node.op for graph_def in metadata.partition_graphs for node in graph_def.node}
  assert gelu_op not in ops and "_MklNativeFusedMatMul" in ops, sorted(ops)


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


def test_packing_keeps_tokens_first_positions_and_rows_without_tokens():
  """What is packed: the tokens, each row's first position, all of a row without tokens;
  in training T is rounded up with the first padding positions; unpack undoes pack."""
  mask = np.array([[1, 1, 1, 0], [0, 0, 0, 0], [1, 0, 0, 0], [1, 1, 1, 1], [0, 1, 0, 0]],
                  np.int32)  # [B=5, S=4]; the last row breaks Google's "tokens first"
  positions = packing.packed_positions(mask).numpy()
  np.testing.assert_array_equal(positions, [[1, 1, 1, 0], [1, 1, 1, 1], [1, 0, 0, 0],
                                            [1, 1, 1, 1], [1, 1, 0, 0]])
  np.testing.assert_array_equal(packing.token_indices(positions),
                                np.flatnonzero(positions.reshape(-1)))
  # 14 positions, rounded up to 16 with the first padding ones (flat 3 and 9), at most 20.
  np.testing.assert_array_equal(packing.token_indices(positions, 8),
                                np.sort(np.append(np.flatnonzero(positions), [3, 9])))
  assert packing.token_indices(positions, 128).shape == (20,)
  x = tf.constant(np.random.default_rng(0).normal(size=(5, 4, 6)), tf.float32)
  layer = PackTokens()
  for training, size in ((False, 14), (True, 20)):  # TRAINING_MULTIPLE exceeds B * S
    rows, indices, first = layer((x, mask), training=training)
    assert rows.shape == (1, size, 6) and indices.shape == (size,)
    np.testing.assert_array_equal(rows[0], x.numpy().reshape(20, 6)[indices.numpy()])
    np.testing.assert_array_equal(tf.gather(rows[0], first[:, 0]), x[:, 0])  # [B, H]
    unpacked = packing.unpack(rows, indices, mask).numpy()
    kept = np.isin(np.arange(20), indices.numpy()).reshape(5, 4)
    np.testing.assert_array_equal(unpacked[kept], x.numpy()[kept])
    assert not unpacked[~kept].any()
  empty = tf.zeros([0, 7, 6])
  rows, indices, first = layer((empty, tf.zeros([0, 7], tf.int32)), training=True)
  assert rows.shape == (1, 0, 6) and indices.shape == (0,) and first.shape == (0, 1)


def test_under_xla_every_position_is_packed_with_a_static_size():
  """A size computed from the mask would make XLA compile the step again for every batch."""
  layer = PackTokens()
  x = tf.constant(np.random.default_rng(0).normal(size=(5, 4, 6)), tf.float32)

  @tf.function(jit_compile=True)
  def packed(mask):
    rows, indices, first = layer((x, mask), training=True)
    assert rows.shape == (1, 20, 6) and indices.shape == (20,)  # static when traced
    return rows, first

  for mask in ([[1, 1, 0, 0]] * 5, [[1, 0, 0, 0]] * 5):
    rows, first = packed(tf.constant(mask))
    np.testing.assert_array_equal(rows[0], x.numpy().reshape(20, 6))
    np.testing.assert_array_equal(first[:, 0], [0, 4, 8, 12, 16])


def test_the_padding_mask_gives_googles_added_masks_attention():
  """SelfAttention's select of -10000 computes what Google's added -10000 does, and padding
  keys get neither weight nor gradient."""
  from modeling.layers import SelfAttention  # pylint: disable=import-outside-toplevel
  layer = SelfAttention(num_heads=2, head_size=4, dropout_rate=0.0, initializer_range=0.5)
  x = tf.random.stateless_normal([3, 5, 8], seed=[1, 2])
  mask = tf.constant([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 0, 0, 0]])
  with tf.GradientTape() as tape:
    tape.watch(x)
    selected = layer((x, mask))
    real = tf.cast(mask, tf.bool)[:, :, None]
    real_sum = tf.reduce_sum(tf.where(real, selected, 0.0))

  def heads(t):  # [3, 5, 8] -> [3, 2, 5, 4]
    return tf.transpose(tf.reshape(t, [3, 5, 2, 4]), [0, 2, 1, 3])
  q, k, v = (heads(dense(x)) for dense in (layer.query, layer.key, layer.value))
  scores = tf.matmul(q, k, transpose_b=True) / 2.0  # sqrt(head_size)
  added = scores + (1.0 - tf.cast(mask, tf.float32)[:, None, None, :]) * -10000.0
  context = tf.matmul(tf.nn.softmax(added), v)  # [3, 2, 5, 4]
  google = layer.output_dense(tf.reshape(tf.transpose(context, [0, 2, 1, 3]), [3, 5, 8]))
  np.testing.assert_allclose(selected, google, atol=1e-5)
  gradient = tape.gradient(real_sum, x)
  np.testing.assert_array_equal(tf.where(real, 0.0, gradient), tf.zeros_like(x))
  assert np.all(np.abs(tf.where(real, gradient, 1.0)) > 0)
  changed = layer((tf.where(real, x, 99.0), mask))  # padding keys get no weight
  np.testing.assert_allclose(tf.where(real, changed, 0.0), tf.where(real, selected, 0.0),
                             atol=1e-6)
  assert not np.allclose(changed[1, 3], selected[1, 3])  # a padding query: its own output changes
