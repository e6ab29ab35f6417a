"""The distillation model: a frozen teacher and a trainable student on the same inputs.

The student is a plain encoder (`modeling.build_encoder`), so its checkpoint
keeps Google's names; the projections W_e, W_h that map its states to the
teacher's width are a layer of their own (`projections`), saved apart.
"""

import tensorflow as tf
import tf_keras as keras

from modeling.encoder import encoder_inputs
from modeling.layers import truncated_normal

PER_LAYER, SHARED = "per_layer", "shared"
PROJECTIONS = (PER_LAYER, SHARED)


class Projections(keras.layers.Layer):
  """TinyBERT's learned maps from the student's width to the teacher's: H_S W.

  Call with the list of the student's states (the embeddings, then each
  layer's output), each [B, S, student_width]; returns them projected, each
  [B, S, teacher_width]. per_layer: one kernel W per state (the paper);
  shared: one kernel for all (the official code). Kernels have no bias (the
  paper's W) and start as the identity when the widths are equal (copied
  teacher layers then start at their teacher's loss), else truncated normal.
  """

  def __init__(self, num_states, student_width, teacher_width, mode=PER_LAYER,
               initializer_range=0.02, **kwargs):
    super().__init__(**kwargs)
    if mode not in PROJECTIONS:
      raise ValueError(f"projection mode must be one of {PROJECTIONS}, got {mode!r}")
    self.num_states = num_states
    self.student_width = student_width
    self.teacher_width = teacher_width
    self.mode = mode
    self.initializer_range = initializer_range

  def build(self, input_shape):
    def initializer():  # a new one per kernel: one instance draws the same values each time
      if self.student_width == self.teacher_width:
        return keras.initializers.Identity()
      return truncated_normal(self.initializer_range)
    names = ["kernel"] if self.mode == SHARED else (
        ["embeddings"] + [f"layer_{i}" for i in range(self.num_states - 1)])
    self.kernels = {name: self.add_weight(name, shape=[self.student_width, self.teacher_width],
                                          initializer=initializer()) for name in names}
    super().build(input_shape)

  def call(self, states):
    kernels = list(self.kernels.values()) * (self.num_states if self.mode == SHARED else 1)
    # [B, S, H_S] x [H_S, H_T] -> [B, S, H_T], in the compute dtype.
    return [tf.matmul(x, tf.cast(w, x.dtype)) for x, w in zip(states, kernels)]

  def get_config(self):
    config = super().get_config()
    config.update(num_states=self.num_states, student_width=self.student_width,
                  teacher_width=self.teacher_width, mode=self.mode,
                  initializer_range=self.initializer_range)
    return config


def build_distillation_model(teacher, student, projections, layer_map, seq_length=None):
  """One functional model running the frozen `teacher` and the `student` encoder.

  teacher, student: encoders built with outputs="all_layers_and_scores"
  (`modeling.build_encoder`); layer_map: the teacher layer (0-based) of each
  student layer (`distillation.layer_map`). The teacher runs in inference
  mode (no dropout) and is not trained. Outputs:
    student_embeddings, teacher_embeddings: [B, S, H_T] (the student's projected);
    student_hidden, teacher_hidden: lists over student layers m of the
      projected student output and teacher layer layer_map[m]'s, [B, S, H_T];
    student_scores, teacher_scores: lists over m as above, pre-mask attention
      scores [B, N, S, S];
    teacher_last_scores: the teacher's last layer's scores (MiniLM pairs it
      with the student's last layer, whatever the map).
  Layers: `teacher`, `student` and `projections`.
  """
  teacher.trainable = False
  inputs = encoder_inputs(seq_length)
  t = teacher(inputs, training=False)
  s = student(inputs)
  projected = projections([s["embedding_output"]] + s["encoder_outputs"])
  outputs = {
      "student_embeddings": projected[0],
      "teacher_embeddings": t["embedding_output"],
      "student_hidden": projected[1:],
      "teacher_hidden": [t["encoder_outputs"][j] for j in layer_map],
      "student_scores": s["attention_scores"],
      "teacher_scores": [t["attention_scores"][j] for j in layer_map],
      "teacher_last_scores": t["attention_scores"][-1],
  }
  return keras.Model(inputs=inputs, outputs=outputs, name="distillation")
