"""The options of general_distill.py and task_distill.py: teacher, student, map, losses.

Each field is also its flag (`cli.options`). `DistillOptions`: what both
share; `TaskDistillOptions`: task_distill.py's (run_classifier's and the
stages'). `resolve_configs` reads the two models' configs.
"""

import dataclasses
import os
from typing import Optional

from classification.run import ClassifierOptions
from cli import FlagError
from cli.options import option, required
from distillation import layer_map as layer_map_lib
from distillation import student as student_lib
from distillation.layerwise import LossWeights
from distillation.model import PER_LAYER, PROJECTIONS
import modeling
from training import runtime

INTERMEDIATE, PREDICTION, BOTH = "intermediate", "prediction", "both"
STAGES = (INTERMEDIATE, PREDICTION, BOTH)


@dataclasses.dataclass(frozen=True, kw_only=True)
class DistillOptions(runtime.RuntimeOptions):
  """The teacher, the student, the layer map and the intermediate losses."""
  teacher_init_checkpoint: str = required(
      "The teacher's weights (Google TF1, HuggingFace or ours). task_distill.py: the "
      "fine-tuned teacher, run_classifier.py's output_dir or a checkpoint with its classifier "
      "layer.")
  teacher_bert_config_file: Optional[str] = option(
      None, "The teacher's bert_config.json. Default: the one stored with "
      "teacher_init_checkpoint.")
  student_bert_config_file: Optional[str] = option(
      None, "The student's bert_config.json. Default: the one stored with "
      "student_init_checkpoint, or the teacher's with the layers of "
      "student_init_from_teacher_layers.")
  student_init_checkpoint: Optional[str] = option(
      None, "The student's initial weights (any format); default: random.")
  student_init_from_teacher_layers: Optional[str] = option(
      None, "Make the student of these teacher layers (0-based, e.g. 1,3,5) and the teacher's "
      "embeddings and pooler.")
  layer_map: str = option(
      "uniform", "The teacher layer of each student layer: uniform (g(m) = m*N/M, rounded "
      "down), top, bottom, or 0-based teacher layers such as 2,5,8,11.")
  projection: str = option(
      PER_LAYER, "The learned maps from the student's width to the teacher's: one per layer "
      "(the paper) or one shared (the official code).", choices=PROJECTIONS)
  embedding_loss_weight: float = option(1.0, "Weight of the embedding-layer MSE.")
  hidden_loss_weight: float = option(1.0, "Weight of the hidden-state MSEs.")
  attention_loss_weight: float = option(
      1.0, "Weight of the MSEs of the unnormalised attention scores.")
  attention_kl_loss_weight: float = option(
      0.0, "Weight of MiniLM's KL of the last layers' attention distributions.")

  def __post_init__(self):
    super().__post_init__()
    if self.student_init_checkpoint and self.student_init_from_teacher_layers:
      raise FlagError("pass --student_init_checkpoint or --student_init_from_teacher_layers, "
                      "not both")
    if not (self.student_bert_config_file or self.student_init_checkpoint
            or self.student_init_from_teacher_layers):
      raise FlagError("the student needs a config: pass --student_bert_config_file, a "
                      "--student_init_checkpoint with its config beside it, or "
                      "--student_init_from_teacher_layers")
    self.loss_weights()  # checks them

  def check_output_dir(self, output_dir):
    """FlagError when `output_dir` is the teacher's folder: the student's checkpoints would
    be taken for (and written over) the teacher's."""
    teacher = self.teacher_init_checkpoint
    teacher_dir = teacher if os.path.isdir(teacher) else os.path.dirname(teacher)
    if os.path.realpath(output_dir) == os.path.realpath(teacher_dir or "."):
      raise FlagError(f"--output_dir {output_dir!r} is the teacher's folder "
                      "(--teacher_init_checkpoint): use another folder for the student")

  def loss_weights(self):
    return LossWeights(self.embedding_loss_weight, self.hidden_loss_weight,
                       self.attention_loss_weight, self.attention_kl_loss_weight)


@dataclasses.dataclass(frozen=True, kw_only=True)
class TaskDistillOptions(ClassifierOptions, DistillOptions):
  """task_distill.py's flags: run_classifier's task flags, the shared ones and the stages.

  The student is the classifier run_classifier would train: its config and
  weights come from the --student_* flags (`bert_config_file`,
  `init_checkpoint` and `num_train_epochs` are not used).
  """
  stage: str = option(BOTH, "intermediate: the layer-wise losses; prediction: the logits; "
                      "both: one then the other.", choices=STAGES)
  intermediate_epochs: float = option(10.0, "Epochs of the intermediate stage.")
  prediction_epochs: float = option(3.0, "Epochs of the prediction stage.")
  temperature: float = option(1.0, "Temperature of the prediction stage's soft labels.")
  check_teacher: bool = option(
      True, "Evaluate the teacher on dev first and stop when it does no better than a "
      "constant answer (an un-fine-tuned teacher).")
  # run_classifier's, no flags here: the student's come from the --student_* flags.
  bert_config_file: Optional[str] = None
  init_checkpoint: Optional[str] = None
  num_train_epochs: float = 3.0

  def __post_init__(self):
    super().__post_init__()
    for name in ("intermediate_epochs", "prediction_epochs", "temperature"):
      runtime.check_positive(name, getattr(self, name))
    self.check_output_dir(self.output_dir)
    if self.stage == INTERMEDIATE and (self.do_eval or self.do_predict or self.export_dir):
      raise FlagError("--stage=intermediate trains no classifier layer: run --stage=prediction "
                      "in the same output_dir before --do_eval, --do_predict or --export_dir")



def resolve_configs(o):
  """(teacher config, student config, the teacher layers the student is made of or None)."""
  teacher_config = modeling.resolve_config(o.teacher_bert_config_file, o.teacher_init_checkpoint)
  if not o.student_init_from_teacher_layers:
    return teacher_config, modeling.resolve_config(o.student_bert_config_file,
                                                   o.student_init_checkpoint), None
  layers = layer_map_lib.parse_indices(o.student_init_from_teacher_layers, student_lib.FLAG)
  given = (modeling.load_config(o.student_bert_config_file) if o.student_bert_config_file
           else None)
  return teacher_config, student_lib.student_config(teacher_config, layers, given), layers
