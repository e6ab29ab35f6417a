"""Our TF2 checkpoints: save/restore identical, encoder shared between model kinds."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras as keras

import modeling
from tests.tiny_models import pretraining_loss

CONFIG = modeling.BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2,
                             num_attention_heads=2, intermediate_size=24, type_vocab_size=2,
                             max_position_embeddings=32)
FEATURES = {"input_ids": np.array([[2, 5, 7, 0], [3, 9, 4, 8]], np.int32),
            "input_mask": np.array([[1, 1, 1, 0], [1, 1, 1, 1]], np.int32),
            "segment_ids": np.array([[0, 0, 1, 0], [0, 1, 1, 1]], np.int32),
            "masked_lm_positions": np.array([[1, 2], [0, 3]], np.int32)}


def _trained_checkpoint(directory):
  """One optimizer step on a pre-training model, saved by a CheckpointManager."""
  model = modeling.build_pretraining_model(CONFIG)
  optimizer = keras.optimizers.Adam(1e-2)
  labels = {"masked_lm_ids": np.array([[4, 6], [1, 2]], np.int32),
            "masked_lm_weights": np.ones([2, 2], np.float32),
            "next_sentence_labels": np.array([[0], [1]], np.int32)}
  with tf.GradientTape() as tape:
    loss = pretraining_loss(model(FEATURES, training=True), labels)["total_loss"]
  optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_weights),
                                model.trainable_weights))
  step = tf.Variable(1, dtype=tf.int64)
  checkpoint = modeling.new_checkpoint(model, optimizer, step=step)
  manager = tf.train.CheckpointManager(checkpoint, str(directory), max_to_keep=2)
  manager.save(checkpoint_number=1)
  return model


def test_tf2_round_trip_and_encoder_transfer(tmp_path):
  model = _trained_checkpoint(tmp_path)
  assert modeling.detect_format(tmp_path)[0] == "tf2"
  restored = modeling.build_pretraining_model(CONFIG)
  report = modeling.load_checkpoint(restored, tmp_path)
  assert len(report.loaded) == len(restored.weights) and not report.heads_absent
  assert "optimizer" in report.ignored and "step" in report.ignored
  assert len(model.weights) == len(restored.weights)
  for a, b in zip(model.weights, restored.weights):
    np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.name)
  for key, value in model(FEATURES).items():
    np.testing.assert_array_equal(value, restored(FEATURES)[key])
  # A classifier takes the encoder; its own layer is reported as absent.
  classifier = modeling.build_classifier(CONFIG, 3)
  report = modeling.load_checkpoint(classifier, tmp_path)
  assert report.heads_absent == ["classifier output layer"]
  assert "cls/predictions/output_bias" in report.ignored
  encoder_out = classifier.get_layer("bert")(
      {k: FEATURES[k] for k in modeling.INPUT_NAMES})["pooled_output"]
  # The classifier's encoder runs its last layer at [CLS] only: the same values, summed in
  # another order.
  np.testing.assert_allclose(encoder_out, model(FEATURES)["pooled_output"], rtol=1e-6, atol=1e-6)


def test_training_resume_restores_optimizer_state(tmp_path):
  _trained_checkpoint(tmp_path)
  model = modeling.build_pretraining_model(CONFIG)
  optimizer = keras.optimizers.Adam(1e-2)
  optimizer.build(model.trainable_weights)
  step = tf.Variable(0, dtype=tf.int64)
  status = modeling.new_checkpoint(model, optimizer, step=step).restore(
      tf.train.latest_checkpoint(str(tmp_path)))
  status.assert_consumed()
  assert int(step) == 1 and int(optimizer.iterations) == 1
  # Adam's moments (every variable after `iterations`) come back non-zero.
  assert all(np.abs(v.numpy()).max() > 0 for v in optimizer.variables()[1:3])


def test_tf2_errors(tmp_path):
  _trained_checkpoint(tmp_path)
  with pytest.raises(modeling.CheckpointError, match="checkpoint has 2 layers, model has 3"):
    modeling.load_checkpoint(modeling.build_encoder(CONFIG.replace(num_hidden_layers=3)),
                             tmp_path)
  with pytest.raises(modeling.CheckpointError, match=r"unexpected bert/encoder/layer_1/"):
    modeling.load_checkpoint(modeling.build_encoder(CONFIG.replace(num_hidden_layers=1)),
                             tmp_path)
  other = tf.train.Checkpoint(v=tf.Variable(1.0))
  prefix = other.write(str(tmp_path / "other" / "ckpt"))
  with pytest.raises(modeling.CheckpointError, match="has no 'bert_weights' object"):
    modeling.load_checkpoint(modeling.build_encoder(CONFIG), prefix)
  with pytest.raises(FileNotFoundError, match="no checkpoint at"):
    modeling.load_checkpoint(modeling.build_encoder(CONFIG), tmp_path / "ckpt-99")


def test_legacy_optimizer_slots_are_not_taken_for_weights(tmp_path):
  # Legacy tf-keras optimizers (training's AdamWeightDecay, Lamb) hang their
  # slots below each weight: bert_weights/<name>/.OPTIMIZER_SLOT/optimizer/m.
  model = modeling.build_pretraining_model(CONFIG)
  optimizer = keras.optimizers.legacy.Adam(1e-2)
  optimizer.apply_gradients((tf.ones_like(v), v) for v in model.trainable_weights)
  modeling.new_checkpoint(model, optimizer).save(str(tmp_path / "ckpt"))
  restored = modeling.build_pretraining_model(CONFIG)
  report = modeling.load_checkpoint(restored, tf.train.latest_checkpoint(str(tmp_path)))
  assert len(report.loaded) == len(restored.weights)
  assert "optimizer slots" in report.ignored
  for a, b in zip(model.weights, restored.weights):
    np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.name)


@pytest.mark.parametrize("saved, loaded", [("fused", "keras"), ("keras", "fused")])
@pytest.mark.parametrize("checkpoint_format", ["tf2", "google_tf1"])
def test_checkpoint_of_one_kernels_path_loads_into_the_other(tmp_path, saved, loaded,
                                                              checkpoint_format):
  """Both kernel families hold the same variables: a checkpoint of either loads into the
  other, strictly, and the loaded model computes the same outputs."""
  with modeling.kernels_scope(saved):
    model = _trained_checkpoint(tmp_path)
  if checkpoint_format == "google_tf1":
    path = modeling.save_google_checkpoint(model, tmp_path / "google" / "bert_model.ckpt")
  else:
    path = tmp_path
  with modeling.kernels_scope(loaded):
    restored = modeling.build_pretraining_model(CONFIG)
  report = modeling.load_checkpoint(restored, path)
  assert modeling.detect_format(path)[0] == checkpoint_format
  assert len(report.loaded) == len(restored.weights) and not report.heads_absent
  for a, b in zip(model.weights, restored.weights):
    assert a.name == b.name
    np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.name)
  for key, value in model(FEATURES).items():
    np.testing.assert_allclose(restored(FEATURES)[key], value, rtol=1e-5, atol=1e-5,
                               err_msg=key)
