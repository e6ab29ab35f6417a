"""The options of general_distill.py and task_distill.py: teacher, student, map, losses.

Each field is also its flag (`cli.options`). `DistillOptions`: what both
share; `TaskStageOptions`: task_distill.py's stages; `TaskDistillOptions` and `SquadDistillOptions`: task_distill.py's for
a classification task (run_classifier's flags) and for SQuAD (run_squad's).
`resolve_configs` reads the two models' configs.
"""

import dataclasses
import os
from typing import Optional

from absl import flags

from classification import options as classification_options
from classification.options import ProcessorFlags
from classification.run import ClassifierOptions
from cli import FlagError
from cli import options as cli_options
from cli.options import option, required
from distillation import layer_map as layer_map_lib
from distillation import losses
from distillation import student as student_lib
from distillation.layerwise import LossWeights
from distillation.model import PER_LAYER, PROJECTIONS
import modeling
from squad.run import SquadOptions
from training import runtime, schedule

# `define_task_distill_flags` defines them for task_distill.py (see `cli.options`).
flags.disclaim_key_flags()

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
  padded_positions: str = option(
      losses.EXCLUDED, "What the embedding, hidden-state and attention-score MSEs do with "
      "padded positions: leave them out (the paper) or include them as the official code "
      "does (every position's state; every query's scores, padded keys' as 0; means over "
      "all max_seq_length positions).", choices=losses.PADDING)
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
class TaskStageOptions(DistillOptions):
  """The stages of task_distill.py, whatever the task (first among the bases of a task's
  options, so that its fields without flags below override the fine-tuning script's).

  The student is the model the task's fine-tuning script would train: its
  config and weights come from the --student_* flags (`bert_config_file`,
  `init_checkpoint` and `num_train_epochs` are not used).
  """
  stage: str = option(BOTH, "intermediate: the layer-wise losses; prediction: the logits; "
                      "both: one then the other.", choices=STAGES)
  intermediate_epochs: float = option(10.0, "Epochs of the intermediate stage.")
  intermediate_lr_schedule: str = option(
      schedule.CONSTANT, "The intermediate stage's learning rate: constant (the official "
      "TinyBERT's) or warmup_linear (warmup_proportion, then linear decay to 0, as the "
      "prediction stage).", choices=schedule.SCHEDULES)
  prediction_epochs: float = option(3.0, "Epochs of the prediction stage.")
  temperature: float = option(1.0, "Temperature of the prediction stage's soft labels.")
  check_teacher: bool = option(
      True, "Check the teacher first: a classifier on dev must do better than a constant "
      "answer (an un-fine-tuned teacher); a SQuAD teacher must have its span layer and find "
      "the answers in training windows more often than a constant position.")
  # The fine-tuning script's, no flags here: the student's come from the --student_* flags.
  bert_config_file: Optional[str] = None
  init_checkpoint: Optional[str] = None
  num_train_epochs: float = 3.0

  def __post_init__(self):
    super().__post_init__()
    for name in ("intermediate_epochs", "prediction_epochs", "temperature"):
      runtime.check_positive(name, getattr(self, name))
    self.check_output_dir(self.output_dir)
    if self.stage == INTERMEDIATE and (getattr(self, "do_eval", False) or self.do_predict
                                       or self.export_dir):
      raise FlagError("--stage=intermediate trains no output layer: run --stage=prediction "
                      "in the same output_dir before --do_eval, --do_predict or --export_dir")


@dataclasses.dataclass(frozen=True, kw_only=True)
class TaskDistillOptions(TaskStageOptions, ClassifierOptions):
  """task_distill.py's flags for a classification task: run_classifier's and the stages'."""
  data_dir: Optional[str] = option(
      None, "Directory with the task's train/dev/test files (classification tasks).")

  def __post_init__(self):
    super().__post_init__()
    if not self.data_dir:
      raise FlagError(f"--task_name={self.task_name} needs --data_dir")


@dataclasses.dataclass(frozen=True, kw_only=True)
class SquadDistillOptions(TaskStageOptions, SquadOptions):
  """task_distill.py's flags for --task_name=squad: run_squad's (its defaults) and the
  stages'."""


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


SQUAD = "squad"
# What task_distill.py chooses between: a classification task's options, with the processor's
# flags, or SQuAD's. Flags both declare show the classification task's help and default, and
# SQuAD's default where it differs.
_TASK_DISTILL_FLAGS = (TaskDistillOptions, ProcessorFlags, SquadDistillOptions)


def define_task_distill_flags():
  """task_distill.py's flags: every task's (`cli.options.define_union_flags`)."""
  cli_options.define_union_flags(_TASK_DISTILL_FLAGS,
                                 when={SquadDistillOptions: f"--task_name={SQUAD}"})


def task_distill_options_from_flags():
  """The parsed flags as `SquadDistillOptions` for --task_name=squad, else as
  `TaskDistillOptions`; FlagError for a flag the task does not use."""
  names = {f.name for c in _TASK_DISTILL_FLAGS for f in cli_options.option_fields(c)}
  names.discard("task_name")
  task_name = flags.FLAGS.task_name
  if task_name.strip().lower() == SQUAD:
    cli_options.check_given_flags(SquadDistillOptions, names, f"with --task_name={task_name}")
    return cli_options.from_flags(SquadDistillOptions)
  classification = {f.name for c in _TASK_DISTILL_FLAGS[:2] for f in cli_options.option_fields(c)}
  cli_options.check_given_flags(TaskDistillOptions, names - classification,
                                f"with --task_name={task_name} (they are SQuAD's)")
  return classification_options.from_flags(TaskDistillOptions)
