"""The options general_distill.py and task_distill.py share: teacher, student, map, losses.

`DistillOptions` holds them (one dataclass field per flag, see
`distillation.flags`); `resolve_configs` reads the two models' configs.
"""

import dataclasses
import os
from typing import Optional

from cli import FlagError
from distillation import layer_map as layer_map_lib
from distillation import student as student_lib
from distillation.model import PER_LAYER, PROJECTIONS
from distillation.task import LossWeights
import modeling
from training import runtime


@dataclasses.dataclass(frozen=True, kw_only=True)
class DistillOptions(runtime.RuntimeOptions):
  """The teacher, the student, the layer map and the intermediate losses."""
  teacher_init_checkpoint: str
  teacher_bert_config_file: Optional[str] = None
  student_bert_config_file: Optional[str] = None
  student_init_checkpoint: Optional[str] = None
  student_init_from_teacher_layers: Optional[str] = None
  layer_map: str = "uniform"
  projection: str = PER_LAYER
  embedding_loss_weight: float = 1.0
  hidden_loss_weight: float = 1.0
  attention_loss_weight: float = 1.0
  attention_kl_loss_weight: float = 0.0

  def __post_init__(self):
    super().__post_init__()
    if self.projection not in PROJECTIONS:
      raise FlagError(f"--projection must be one of {', '.join(PROJECTIONS)}, "
                      f"got {self.projection!r}")
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
