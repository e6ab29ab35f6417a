"""`LayerwiseDistillationTask`: layer-wise distillation (TinyBERT's intermediate losses) as a Task.

The runner trains the student and the projections; the teacher is loaded from
its checkpoint whenever the model is built and never trained. output_dir's
checkpoints hold the student under Google's names (`bert_weights`, what
`modeling.load_checkpoint` reads, so run_classifier.py takes them as
`--init_checkpoint`) and the projections apart (`projections`).
"""

import dataclasses

import tensorflow as tf
import tf_keras

from cli import FlagError
from distillation import losses
from distillation.model import PER_LAYER, Projections, build_distillation_model
from distillation.student import copy_teacher_layers
import modeling
from modeling.config import ConfigError
from training import task as task_lib


@dataclasses.dataclass(frozen=True)
class LossWeights:
  """Each loss term's weight (0 leaves it out); TinyBERT's intermediate stage by default.

  embedding: MSE(E_S W_e, E_T); hidden: sum over student layers of
  MSE(H_S W_h, H_T); attention: sum over student layers of the MSE of the
  pre-mask scores; attention_kl: MiniLM's KL of the last layers' attention.
  """
  embedding: float = 1.0
  hidden: float = 1.0
  attention: float = 1.0
  attention_kl: float = 0.0

  def __post_init__(self):
    values = dataclasses.asdict(self)
    wrong = [f"--{name}_loss_weight {value}" for name, value in values.items() if value < 0]
    if wrong:
      raise FlagError(f"loss weights must be >= 0, got {', '.join(wrong)}")
    if not any(values.values()):
      raise FlagError("every loss weight is 0: nothing to distill")

  def terms(self):
    """{metric name: weight} of the terms in use."""
    return {f"{name}_loss": weight for name, weight in dataclasses.asdict(self).items()
            if weight}


class LayerwiseDistillationTask(task_lib.Task):
  """A frozen teacher's embeddings, hidden states and attention distilled into a student.

  Subclasses supply `dataset_fn` (batches with input_ids, input_mask, segment_ids).

  Args:
    teacher_config, student_config: `BertConfig`s (same vocabulary; the same
      number of heads when an attention loss is on).
    teacher_checkpoint: the teacher's weights, any format `modeling.load_checkpoint` reads.
    layer_map: the teacher layer (0-based) of each student layer.
    weights: `LossWeights`.
    projection: "per_layer" or "shared" (`distillation.model.Projections`).
    padding: whether the MSEs leave padded positions out ("excluded", the paper) or
      count them as the official code does ("included"; `distillation.losses`).
    teacher_layers: build the student from these teacher layers
      (`distillation.student`), or None.
  """

  def __init__(self, teacher_config, teacher_checkpoint, student_config, layer_map,
               weights=LossWeights(), projection=PER_LAYER, padding=losses.EXCLUDED,
               teacher_layers=None, seq_length=None):
    if padding not in losses.PADDING:
      raise ValueError(f"padding must be one of {losses.PADDING}, got {padding!r}")
    if student_config.vocab_size != teacher_config.vocab_size:
      raise ConfigError(f"the student's vocab_size {student_config.vocab_size} differs from "
                        f"the teacher's {teacher_config.vocab_size}: both read the same ids")
    heads = (student_config.num_attention_heads, teacher_config.num_attention_heads)
    if (weights.attention or weights.attention_kl) and heads[0] != heads[1]:
      raise ConfigError(f"the attention losses compare head by head: the student has {heads[0]} "
                        f"attention heads, the teacher {heads[1]}")
    self.teacher_config = teacher_config
    self.teacher_checkpoint = teacher_checkpoint
    self.student_config = student_config
    self.layer_map = tuple(layer_map)
    self.weights = weights
    self.projection = projection
    self.padding = padding
    self.teacher_layers = teacher_layers
    self.seq_length = seq_length

  def build_model(self):
    """The distillation model, its teacher loaded (and copied into the student if asked)."""
    def encoder(config, name):
      return modeling.build_encoder(config, seq_length=self.seq_length,
                                    outputs="all_layers_and_scores", name=name)
    teacher = encoder(self.teacher_config, "teacher")
    modeling.load_checkpoint(teacher, self.teacher_checkpoint)
    student = encoder(self.student_config, "student")
    if self.teacher_layers:
      copy_teacher_layers(teacher, student, self.teacher_layers)
    projections = Projections(
        self.student_config.num_hidden_layers + 1, self.student_config.hidden_size,
        self.teacher_config.hidden_size, self.projection,
        self.student_config.initializer_range, name="projections")
    return build_distillation_model(teacher, student, projections, self.layer_map,
                                    self.seq_length)

  def loss(self, features, outputs):
    """The weighted sum of the terms in use, and each term for its metric."""
    mask = features["input_mask"]
    w = self.weights
    terms = {}
    if w.embedding:
      terms["embedding_loss"] = losses.hidden_mse(outputs["student_embeddings"],
                                                  outputs["teacher_embeddings"], mask,
                                                  self.padding)
    if w.hidden:
      terms["hidden_loss"] = tf.add_n([
          losses.hidden_mse(s, t, mask, self.padding)
          for s, t in zip(outputs["student_hidden"], outputs["teacher_hidden"])])
    if w.attention:
      terms["attention_loss"] = tf.add_n([
          losses.attention_score_mse(s, t, mask, self.padding)
          for s, t in zip(outputs["student_scores"], outputs["teacher_scores"])])
    if w.attention_kl:
      terms["attention_kl_loss"] = losses.attention_kl(
          outputs["student_scores"][-1], outputs["teacher_last_scores"], mask)
    weights = w.terms()
    total = tf.add_n([weights[name] * value for name, value in terms.items()])
    return total, {name: (value,) for name, value in terms.items()}

  def metrics(self):
    return {name: tf_keras.metrics.Mean(name) for name in self.weights.terms()}

  def new_checkpoint(self, model, optimizer, **extra):
    """The student by Google name (`bert_weights`), the projections, optimizer and extra."""
    return modeling.new_checkpoint(model.get_layer("student"), optimizer,
                                   projections=model.get_layer("projections").kernels, **extra)

  def load_weights(self, model, path):
    """Loads a student checkpoint (any format) into the student: the warm start."""
    return modeling.load_checkpoint(model.get_layer("student"), path).summary()
