"""The prediction-layer stage of task distillation: the student's outputs learn the teacher's.

TinyBERT's last stage: the soft cross-entropy between the teacher's and the
student's distributions at temperature t. For a classifier (fine-tuned by
run_classifier.py) they are its class distributions (for a regression task,
the squared difference of the scores); for SQuAD (run_squad.py) the start and
the end distributions over the window's positions, the mean of the two as in
run_squad's loss. The teacher is frozen. output_dir's checkpoints hold the
student under Google's names, the same as the fine-tuning script's, so every
script and export reads them.
"""

import tensorflow as tf
import tf_keras as keras

from classification.task import ClassifierTask
from distillation import losses
from distillation.student import copy_teacher_layers
from distillation.teacher import load_teacher
import modeling
from modeling.encoder import encoder_inputs
from squad.task import SquadTask


class _TeacherStudent:
  """A frozen fine-tuned `teacher` and a trainable `student` of the same kind on the same
  inputs; the checkpoints hold the student alone, by Google name.

  Args:
    teacher_config, teacher_checkpoint: the fine-tuned teacher (`load_teacher`).
    temperature: t of the soft cross-entropy.
    teacher_layers: start the student from these teacher layers
      (`distillation.student`), or None; a warm start or resumed checkpoint
      replaces them.
  """

  def _init_teacher(self, teacher_config, teacher_checkpoint, temperature, teacher_layers):
    if temperature <= 0:
      raise ValueError(f"temperature must be > 0, got {temperature}")
    self.teacher_config = teacher_config
    self.teacher_checkpoint = teacher_checkpoint
    self.temperature = temperature
    self.teacher_layers = teacher_layers

  def _teacher_and_student(self, build, kind):
    """One model running `build(config, name)`'s teacher and student (models of name `kind`,
    `load_teacher`'s); outputs "teacher_logits" and "student_logits", or each one's outputs
    by name prefixed "teacher_" and "student_"."""
    teacher = build(self.teacher_config, "teacher")
    load_teacher(teacher, self.teacher_checkpoint, kind)
    teacher.trainable = False
    student = build(self.bert_config, "student")
    if self.teacher_layers:
      copy_teacher_layers(teacher, student, self.teacher_layers)
    inputs = encoder_inputs()
    outputs = {}
    for role, output in (("teacher", teacher(inputs, training=False)),
                         ("student", student(inputs))):
      named = output if isinstance(output, dict) else {"logits": output}
      outputs.update({f"{role}_{key}": value for key, value in named.items()})
    return keras.Model(inputs=inputs, outputs=outputs, name="prediction_distillation")

  def new_checkpoint(self, model, optimizer, **extra):
    """The student by Google name, the optimizer and `extra`."""
    return modeling.new_checkpoint(model.get_layer("student"), optimizer, **extra)

  def load_weights(self, model, path):
    """Loads a student checkpoint (any format) into the student: the warm start."""
    return modeling.load_checkpoint(model.get_layer("student"), path).summary()


class PredictionDistillationTask(_TeacherStudent, ClassifierTask):
  """The student classifier trained on the frozen teacher's logits.

  Args: `_TeacherStudent`'s, then the student's `ClassifierTask` arguments
  (its config, num_labels, records, ...).
  """

  def __init__(self, teacher_config, teacher_checkpoint, temperature=1.0, teacher_layers=None,
               **classifier_kwargs):
    super().__init__(**classifier_kwargs)
    self._init_teacher(teacher_config, teacher_checkpoint, temperature, teacher_layers)

  def build_model(self):
    """`teacher` and `student` classifiers on the same inputs; outputs both logits."""
    return self._teacher_and_student(
        lambda config, name: modeling.build_classifier(config, self.num_labels, name=name),
        "bert_classifier")

  def loss(self, features, outputs):
    student, teacher = outputs["student_logits"], outputs["teacher_logits"]
    if self.is_regression:
      return tf.reduce_mean(tf.square(tf.cast(student[:, 0], tf.float32) -
                                      tf.cast(teacher[:, 0], tf.float32)))
    loss = losses.soft_cross_entropy(student, teacher, self.temperature)
    predictions = tf.argmax(student, -1)
    return loss, {"accuracy": (features["label_ids"], predictions),
                  "agreement": (tf.argmax(teacher, -1), predictions)}

  def metrics(self):
    if self.is_regression:
      return {}
    return {name: keras.metrics.Accuracy(name) for name in ("accuracy", "agreement")}


class SquadPredictionDistillationTask(_TeacherStudent, SquadTask):
  """The student SQuAD model trained on the frozen teacher's start and end logits.

  The loss is the mean of the soft cross-entropies of the start and of the
  end distributions over the window's positions (run_squad's model and loss
  put them over every position, padding included; so does this). Metrics:
  how often the student's most likely start (end) is the teacher's.

  Args: `_TeacherStudent`'s, then the student's `SquadTask` arguments.
  """

  def __init__(self, teacher_config, teacher_checkpoint, temperature=1.0, teacher_layers=None,
               **squad_kwargs):
    super().__init__(**squad_kwargs)
    self._init_teacher(teacher_config, teacher_checkpoint, temperature, teacher_layers)

  def build_model(self):
    """`teacher` and `student` SQuAD models on the same inputs; outputs both logits."""
    return self._teacher_and_student(
        lambda config, name: modeling.build_squad_model(config, name=name), "bert_squad")

  def loss(self, features, outputs):
    del features
    terms, metrics = [], {}
    for end in ("start", "end"):
      s, t = outputs[f"student_{end}_logits"], outputs[f"teacher_{end}_logits"]  # [B, S] each
      terms.append(losses.soft_cross_entropy(s, t, self.temperature))
      metrics[f"{end}_agreement"] = (tf.argmax(t, -1), tf.argmax(s, -1))
    return (terms[0] + terms[1]) / 2.0, metrics

  def metrics(self):
    return {name: keras.metrics.Accuracy(name) for name in ("start_agreement", "end_agreement")}
