"""The prediction-layer stage of task distillation: the student's logits learn the teacher's.

TinyBERT's last stage: the soft cross-entropy between the teacher's and the
student's class distributions at temperature t (for a regression task, the
squared difference of their scores). The teacher is a classifier fine-tuned
by run_classifier.py, frozen. output_dir's checkpoints hold the student
classifier under Google's names, the same as run_classifier.py's, so every
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


class PredictionDistillationTask(ClassifierTask):
  """The student classifier trained on the frozen teacher's logits.

  Args:
    teacher_config, teacher_checkpoint: the fine-tuned teacher (`load_teacher`).
    temperature: t of the soft cross-entropy.
    teacher_layers: start the student from these teacher layers
      (`distillation.student`), or None; a warm start or resumed checkpoint
      replaces them.
    classifier_kwargs: the student's `ClassifierTask` arguments (its config,
      num_labels, records, ...).
  """

  def __init__(self, teacher_config, teacher_checkpoint, temperature=1.0, teacher_layers=None,
               **classifier_kwargs):
    super().__init__(**classifier_kwargs)
    if temperature <= 0:
      raise ValueError(f"temperature must be > 0, got {temperature}")
    self.teacher_config = teacher_config
    self.teacher_checkpoint = teacher_checkpoint
    self.temperature = temperature
    self.teacher_layers = teacher_layers

  def build_model(self):
    """`teacher` and `student` classifiers on the same inputs; outputs both logits."""
    def classifier(config, name):
      return modeling.build_classifier(config, self.num_labels, name=name)
    teacher = classifier(self.teacher_config, "teacher")
    load_teacher(teacher, self.teacher_checkpoint)
    teacher.trainable = False
    student = classifier(self.bert_config, "student")
    if self.teacher_layers:
      copy_teacher_layers(teacher, student, self.teacher_layers)
    inputs = encoder_inputs()
    return keras.Model(inputs=inputs, outputs={"teacher_logits": teacher(inputs, training=False),
                                               "student_logits": student(inputs)},
                       name="prediction_distillation")

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

  def new_checkpoint(self, model, optimizer, **extra):
    """The student classifier by Google name, the optimizer and `extra`."""
    return modeling.new_checkpoint(model.get_layer("student"), optimizer, **extra)

  def load_weights(self, model, path):
    """Loads a student checkpoint (any format) into the student: the warm start."""
    return modeling.load_checkpoint(model.get_layer("student"), path).summary()
