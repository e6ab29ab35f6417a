"""The layer-wise distillation task: a frozen teacher in inference mode, a trainable student whose
checkpoint keeps Google's names, projections stored apart, the loss terms and their checks."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from cli import FlagError
import modeling
from distillation import layer_map, losses
from distillation.layerwise import LayerwiseDistillationTask, LossWeights
from tests.tiny_models import TINY_BERT, bert_inputs

TEACHER = TINY_BERT.replace(num_hidden_layers=4)


@pytest.fixture(name="teacher", scope="module")
def fixture_teacher(tmp_path_factory):
  """(a random teacher encoder, its Google TF1 checkpoint)."""
  encoder = modeling.build_encoder(TEACHER)
  prefix = str(tmp_path_factory.mktemp("teacher") / "bert_model.ckpt")
  return encoder, modeling.save_google_checkpoint(encoder, prefix)


def _task(checkpoint, student=TINY_BERT, **kwargs):
  kwargs.setdefault("weights", LossWeights(attention_kl=1.0))
  mapped = layer_map.uniform(student.num_hidden_layers, TEACHER.num_hidden_layers)
  return LayerwiseDistillationTask(TEACHER, checkpoint, student, mapped, **kwargs)


def test_the_teacher_is_loaded_frozen_and_in_inference_mode(teacher):
  encoder, checkpoint = teacher
  model = _task(checkpoint).build_model()
  for a, b in zip(model.get_layer("teacher").get_weights(), encoder.get_weights()):
    np.testing.assert_array_equal(a, b)
  trained = {id(v) for v in model.trainable_variables}
  assert not trained & {id(v) for v in model.get_layer("teacher").weights}
  assert trained == {id(v) for v in model.get_layer("student").trainable_variables +
                     model.get_layer("projections").trainable_variables}
  features = bert_inputs()
  first, second = model(features, training=True), model(features, training=True)
  np.testing.assert_array_equal(first["teacher_hidden"][-1], second["teacher_hidden"][-1])
  assert not np.array_equal(first["student_hidden"][-1], second["student_hidden"][-1])  # dropout


def test_a_student_of_every_teacher_layer_has_zero_loss(teacher):
  task = _task(teacher[1], student=TEACHER, teacher_layers=(0, 1, 2, 3))
  model = task.build_model()
  loss, updates = task.loss(bert_inputs(), model(bert_inputs()))
  assert set(updates) == {"embedding_loss", "hidden_loss", "attention_loss", "attention_kl_loss"}
  assert abs(float(loss)) < 1e-6


def test_the_loss_is_the_weighted_sum_of_its_terms(teacher):
  features = bert_inputs()
  task = _task(teacher[1], weights=LossWeights(embedding=2.0, hidden=0.5, attention=0.0,
                                               attention_kl=3.0))
  model = task.build_model()
  loss, updates = task.loss(features, model(features))
  assert set(updates) == set(task.metrics()) == {"embedding_loss", "hidden_loss",
                                                 "attention_kl_loss"}
  terms = {name: float(value[0]) for name, value in updates.items()}
  assert min(terms.values()) > 0
  expected = 2 * terms["embedding_loss"] + 0.5 * terms["hidden_loss"] + 3 * terms[
      "attention_kl_loss"]
  assert float(loss) == pytest.approx(expected, rel=1e-6)


def test_the_padding_choice_reaches_every_mse(teacher):
  features = bert_inputs()
  assert features["input_mask"].min() == 0  # some rows are padded
  outputs = _task(teacher[1]).build_model()(features)
  terms = {}
  for padding in losses.PADDING:
    _, updates = _task(teacher[1], padding=padding).loss(features, outputs)
    terms[padding] = {name: float(value[0]) for name, value in updates.items()}
  mask = features["input_mask"]
  assert terms[losses.INCLUDED]["hidden_loss"] == pytest.approx(sum(
      float(losses.hidden_mse(s, t, mask, losses.INCLUDED))
      for s, t in zip(outputs["student_hidden"], outputs["teacher_hidden"])), rel=1e-6)
  for name in ("embedding_loss", "hidden_loss", "attention_loss"):
    assert terms[losses.INCLUDED][name] != pytest.approx(terms[losses.EXCLUDED][name], rel=1e-3)
  # MiniLM's KL attends as the model does: padded keys have no probability either way.
  assert terms[losses.INCLUDED]["attention_kl_loss"] == pytest.approx(
      terms[losses.EXCLUDED]["attention_kl_loss"], rel=1e-6)
  with pytest.raises(ValueError, match="padding must be one of"):
    _task(teacher[1], padding="zero")


@pytest.mark.slow
def test_training_lowers_the_loss_and_leaves_the_teacher(teacher):
  task = _task(teacher[1], student=TINY_BERT.replace(hidden_size=24, num_attention_heads=4,
                                                     hidden_dropout_prob=0.0,
                                                     attention_probs_dropout_prob=0.0))
  model = task.build_model()
  before = [w.copy() for w in model.get_layer("teacher").get_weights()]
  optimizer = tf_keras.optimizers.Adam(1e-2)
  features = bert_inputs(batch=4)

  @tf.function
  def step():
    with tf.GradientTape() as tape:
      loss, _ = task.loss(features, model(features, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss
  losses = [float(step()) for _ in range(40)]
  # The last 5 steps' mean, not the last step's: Adam at 1e-2 may oscillate around the end.
  assert np.mean(losses[-5:]) < 0.5 * losses[0], losses
  for a, b in zip(model.get_layer("teacher").get_weights(), before):
    np.testing.assert_array_equal(a, b)


def test_the_checkpoint_holds_the_student_by_google_name_and_the_projections(teacher, tmp_path):
  task = _task(teacher[1], student=TINY_BERT.replace(hidden_size=24, num_attention_heads=4))
  model = task.build_model()
  path = task.new_checkpoint(model, tf_keras.optimizers.Adam()).save(str(tmp_path / "ckpt"))
  keys = [name for name, _ in tf.train.list_variables(path)]
  assert sorted(k.split("/")[1] for k in keys if k.startswith("projections/")) == [
      "embeddings", "layer_0", "layer_1"]
  assert len([k for k in keys if k.startswith("bert_weights/")]) == len(
      model.get_layer("student").weights)
  # run_classifier's model reads the student as it reads any BERT checkpoint.
  classifier = modeling.build_classifier(task.student_config, 2)
  report = modeling.load_checkpoint(classifier, path)
  assert report.heads_absent == ["classifier output layer"]
  for a, b in zip(classifier.get_layer("bert").get_weights(),
                  model.get_layer("student").get_weights()):
    np.testing.assert_array_equal(a, b)


def test_mismatched_configs_and_weights_are_refused(teacher):
  with pytest.raises(modeling.ConfigError, match="the attention losses compare head by head: "
                     "the student has 2 attention heads, the teacher 4"):
    _task(teacher[1], student=TINY_BERT.replace(num_attention_heads=2))
  _task(teacher[1], student=TINY_BERT.replace(num_attention_heads=2),
        weights=LossWeights(attention=0.0))  # no attention loss: any heads
  with pytest.raises(modeling.ConfigError, match="vocab_size 98 differs from the teacher's 99"):
    _task(teacher[1], student=TINY_BERT.replace(vocab_size=98))
  with pytest.raises(FlagError, match="loss weights must be >= 0, got --hidden_loss_weight -1"):
    LossWeights(hidden=-1.0)
  with pytest.raises(FlagError, match="every loss weight is 0"):
    LossWeights(embedding=0.0, hidden=0.0, attention=0.0)
