"""The encoder: outputs, pooler and padding mask, Google's initializers, XLA, the training
graph's compiled kernels and gathers, mixed precision."""

import numpy as np
import tensorflow as tf

import modeling
from tests.tiny_models import TINY_BERT, bert_inputs


def test_encoder_outputs_and_mask():
  encoder = modeling.build_encoder(TINY_BERT, outputs="all_layers")
  assert encoder.input_names == ["input_ids", "input_mask", "segment_ids"]
  feats = bert_inputs()
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
  encoder = modeling.build_encoder(TINY_BERT)
  feats = bert_inputs()
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
  """With the fused kernels, training runs the GELU as XLA kernels, inference as plain ops
  (what SavedModels hold); the embedding rows come from the tables' values, never a
  ResourceGather (which would put the word table in copy-on-read mode: every read and
  update would copy it whole)."""
  config = TINY_BERT.replace(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
  with modeling.kernels_scope("fused"):
    model = modeling.build_pretraining_model(config, max_predictions_per_seq=2,
                                             outputs="positions")
  features = dict(bert_inputs(), masked_lm_positions=np.array([[1, 2]] * 3, np.int32))

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
  encoder32 = modeling.build_encoder(TINY_BERT)
  encoder16 = modeling.build_encoder(TINY_BERT, dtype="mixed_bfloat16")
  encoder16.set_weights(encoder32.get_weights())
  assert all(w.dtype == tf.float32 for w in encoder16.weights)
  feats = bert_inputs()
  out16 = encoder16(feats)["sequence_output"]
  assert out16.dtype == tf.bfloat16
  out32 = encoder32(feats)["sequence_output"].numpy()
  assert np.abs(out16.numpy().astype(np.float32) - out32).max() < 0.15
  model = modeling.build_pretraining_model(TINY_BERT, dtype="mixed_bfloat16")
  logits = model(dict(feats, masked_lm_positions=np.zeros([3, 2], np.int32)))
  assert logits["masked_lm_logits"].dtype == tf.float32


def test_attention_scores_are_the_pre_mask_qk_product():
  """outputs="all_layers_and_scores" adds each layer's QK^T/sqrt(d) per head, padded keys
  included (no mask added), and leaves the other outputs as they are."""
  encoder = modeling.build_encoder(TINY_BERT, outputs="all_layers_and_scores")
  plain = modeling.build_encoder(TINY_BERT, outputs="all_layers")
  plain.set_weights(encoder.get_weights())
  feats = bert_inputs()
  out = encoder(feats)
  np.testing.assert_array_equal(out["sequence_output"], plain(feats)["sequence_output"])
  heads, size = TINY_BERT.num_attention_heads, TINY_BERT.head_size
  layer_inputs = [out["embedding_output"]] + out["encoder_outputs"][:-1]
  assert len(out["attention_scores"]) == TINY_BERT.num_hidden_layers
  for i, (x, scores) in enumerate(zip(layer_inputs, out["attention_scores"])):
    attention = encoder.get_layer(f"layer_{i}").attention

    def split(dense, x=x):  # [B, S, H] -> [B, N, S, D]
      y = x.numpy() @ dense.kernel.numpy() + dense.bias.numpy()
      return y.reshape(3, 16, heads, size).transpose(0, 2, 1, 3)
    expected = split(attention.query) @ split(attention.key).transpose(0, 1, 3, 2)
    assert scores.shape == (3, heads, 16, 16) and scores.dtype == tf.float32
    np.testing.assert_allclose(scores, expected / np.sqrt(size), rtol=1e-4, atol=1e-5)
  assert (feats["input_mask"] == 0).any()  # padded keys were compared too
