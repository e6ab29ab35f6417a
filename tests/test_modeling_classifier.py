"""build_classifier: run_classifier's output layer on the pooled output; its encoder (outputs
"pooled") at [CLS] only and on the tokens only, against the full encoder."""

import numpy as np
import pytest
import tensorflow as tf

import modeling
from modeling.layers import packing
from tests.tiny_models import TINY_BERT, bert_inputs


@pytest.mark.parametrize("num_labels", [3, 1])
def test_classifier(num_labels):
  model = modeling.build_classifier(TINY_BERT, num_labels)
  head = model.get_layer("classifier")
  feats = bert_inputs()
  logits = model(feats)
  assert logits.shape == (3, num_labels) and logits.dtype == tf.float32
  pooled = model.get_layer("bert")(feats)["pooled_output"].numpy()
  expected = pooled @ head.output_weights.numpy().T + head.output_bias.numpy()
  np.testing.assert_allclose(logits, expected, atol=1e-5)
  assert head.output_weights.shape == (num_labels, 32)
  with pytest.raises(ValueError, match="num_labels must be >= 1"):
    modeling.build_classifier(TINY_BERT, 0)


def test_last_layer_at_cls_only_gives_the_same_logits_and_gradients():
  """The classifier's own encoder runs its last layer at [CLS] only; with a full encoder
  (same weights) the logits and every gradient are the same."""
  config = TINY_BERT.replace(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
  fast = modeling.build_classifier(config, 2, dropout_rate=0.0)
  full = modeling.build_classifier(config, 2, dropout_rate=0.0,
                                   encoder=modeling.build_encoder(config))
  assert [w.name for w in fast.weights] == [w.name for w in full.weights]
  assert set(fast.get_layer("bert").output) == {"pooled_output"}
  fast.set_weights(full.get_weights())
  features, labels = bert_inputs(), np.array([0, 1, 1])
  results = []
  for model in (full, fast):
    with tf.GradientTape() as tape:
      logits = model(features, training=True)
      loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
    results.append((logits, tape.gradient(loss, model.trainable_variables)))
  (logits_full, grads_full), (logits_fast, grads_fast) = results
  np.testing.assert_allclose(logits_fast, logits_full, atol=1e-5)
  for g_fast, g_full in zip(grads_fast, grads_full):
    np.testing.assert_allclose(tf.convert_to_tensor(g_fast), tf.convert_to_tensor(g_full),
                               atol=1e-6)
  with pytest.raises(ValueError, match="outputs must be one of 'sequence', 'all_layers', "
                     "'all_layers_and_scores', 'positions', 'pooled', got 'selected'"):
    modeling.build_encoder(TINY_BERT, outputs="selected")


def _ragged_features(batch=6, seq=16, seed=1):
  """Random features whose rows are full length, short, [CLS] only, and without any token
  (a padding example: all-zero mask)."""
  rng = np.random.default_rng(seed)
  lengths = np.concatenate([[seq, 1, 0], rng.integers(2, seq, size=batch - 3)])
  mask = (np.arange(seq)[None, :] < lengths[:, None]).astype(np.int32)
  ids = rng.integers(1, TINY_BERT.vocab_size, size=(batch, seq)).astype(np.int32) * mask
  segments = ((np.arange(seq)[None, :] >= lengths[:, None] // 2) * mask).astype(np.int32)
  return {"input_ids": ids, "input_mask": mask, "segment_ids": segments}


def _logits_and_gradients(model, features, training, jit_compile=False):
  labels = np.arange(len(features["input_ids"])) % 2

  @tf.function(jit_compile=jit_compile)
  def step(features):
    with tf.GradientTape() as tape:
      logits = model(features, training=training)
      loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
    return logits, [tf.convert_to_tensor(g) for g in tape.gradient(loss, model.trainable_variables)]
  return step(features)


def _packed_and_unpacked(config, kernels="fused"):
  """The classifier (its encoder packed) and one on the full encoder, with the same weights."""
  with modeling.kernels_scope(kernels):
    packed = modeling.build_classifier(config, 2, dropout_rate=0.0)
    unpacked = modeling.build_classifier(config, 2, dropout_rate=0.0,
                                         encoder=modeling.build_encoder(config))
  assert [w.name for w in packed.weights] == [w.name for w in unpacked.weights]
  packed.set_weights(unpacked.get_weights())
  return packed, unpacked


def _assert_same_logits_and_gradients(packed, unpacked, features, training, jit_compile=False):
  (logits, grads), (want_logits, want_grads) = (
      _logits_and_gradients(model, features, training, jit_compile)
      for model in (packed, unpacked))
  np.testing.assert_allclose(logits, want_logits, rtol=1e-5, atol=1e-5)
  assert len(grads) == len(want_grads) == len(unpacked.trainable_variables)
  for variable, got, want in zip(unpacked.trainable_variables, grads, want_grads):
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=variable.name)


@pytest.mark.parametrize("kernels", ["fused", "keras"])
def test_packed_tokens_give_the_same_logits_and_gradients(kernels):
  """The packed encoder runs the layers on the tokens only; the logits and every gradient
  are the unpacked model's, on rows of every length, the all-padding one too."""
  packed, unpacked = _packed_and_unpacked(TINY_BERT, kernels)
  assert "pack_tokens" in [layer.name for layer in packed.get_layer("bert").layers]
  _assert_same_logits_and_gradients(packed, unpacked, _ragged_features(), training=False)


@pytest.mark.slow
@pytest.mark.parametrize("jit_compile", [False, True])
def test_packed_tokens_in_training_and_under_xla(jit_compile, monkeypatch):
  """In training (dropout off) the packed rows are rounded up with padding positions (here
  to a multiple of 16 of 6 x 16) and the compiled kernels run: still the unpacked model's
  logits and gradients, also jit-compiled (the packed size is a dynamic dimension)."""
  monkeypatch.setattr(packing, "TRAINING_MULTIPLE", 16)
  config = TINY_BERT.replace(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
  packed, unpacked = _packed_and_unpacked(config)
  features = _ragged_features()
  assert features["input_mask"].sum() % 16 and features["input_mask"].sum() + 16 < 6 * 16
  _assert_same_logits_and_gradients(packed, unpacked, features, training=True,
                                    jit_compile=jit_compile)


@pytest.mark.slow
def test_packed_tokens_with_dropout_and_an_empty_batch():
  """Dropout on the packed rows: training changes the logits and every variable gets a
  gradient. An empty batch (a replica's share of a short last batch) gives empty logits."""
  packed = modeling.build_classifier(TINY_BERT, 2)
  features = _ragged_features()
  logits, grads = _logits_and_gradients(packed, features, training=True)
  assert np.isfinite(logits).all()
  assert np.abs(logits - packed(features, training=False)).max() > 1e-4
  assert all(np.abs(g).max() > 0 for g in grads)
  for seq in (0, 1, 16):
    empty = {name: np.zeros([0, seq], np.int32) for name in modeling.INPUT_NAMES}
    for training in (False, True):
      logits, grads = _logits_and_gradients(packed, empty, training)
      assert logits.shape == (0, 2) and not any(np.abs(g).max() > 0 for g in grads)


def test_packed_tokens_on_googles_checkpoint(shared_dir):
  """Real weights (Google's tiny TF1 checkpoint) and its reference inputs: the packed
  encoder's pooled output is Google's, and the packed classifier's logits the unpacked one's."""
  tiny = shared_dir / "fixtures" / "google_bert_tiny"
  config = modeling.BertConfig.from_json_file(tiny / "bert_config.json")
  reference = dict(np.load(tiny / "reference.npz"))
  features = {name: reference[name] for name in modeling.INPUT_NAMES}
  encoder = modeling.build_encoder(config, outputs="pooled")
  modeling.load_checkpoint(encoder, tiny / "bert_model.ckpt")
  np.testing.assert_allclose(encoder(features)["pooled_output"], reference["pooled_output"],
                             atol=1e-5)
  packed, unpacked = _packed_and_unpacked(config)
  modeling.load_checkpoint(unpacked, tiny / "bert_model.ckpt")
  packed.set_weights(unpacked.get_weights())
  np.testing.assert_allclose(packed(features), unpacked(features), rtol=1e-5, atol=1e-5)
