"""The flags general_distill.py and task_distill.py share, one per `DistillOptions` field.

A script calls `define_distillation_flags()`, then
`flags.adopt_module_key_flags(distillation.flags)` so that `--help` lists them.
"""

from absl import flags

from distillation.model import PROJECTIONS


def define_distillation_flags(teacher_help):
  """The teacher, student, layer-map, projection and loss-weight flags.

  teacher_help: what --teacher_init_checkpoint must be for the script.
  """
  flags.DEFINE_string("teacher_init_checkpoint", None, teacher_help)
  flags.DEFINE_string("teacher_bert_config_file", None,
                      "The teacher's bert_config.json. Default: the one stored with "
                      "teacher_init_checkpoint.")
  flags.DEFINE_string("student_bert_config_file", None,
                      "The student's bert_config.json. Default: the one stored with "
                      "student_init_checkpoint, or the teacher's with the layers of "
                      "student_init_from_teacher_layers.")
  flags.DEFINE_string("student_init_checkpoint", None,
                      "The student's initial weights (any format); default: random.")
  flags.DEFINE_string("student_init_from_teacher_layers", None,
                      "Make the student of these teacher layers (0-based, e.g. 1,3,5) and the "
                      "teacher's embeddings and pooler.")
  flags.DEFINE_string("layer_map", "uniform",
                      "The teacher layer of each student layer: uniform (g(m) = m*N/M, rounded "
                      "down), top, bottom, or 0-based teacher layers such as 2,5,8,11.")
  flags.DEFINE_enum("projection", "per_layer", PROJECTIONS,
                    "The learned maps from the student's width to the teacher's: one per layer "
                    "(the paper) or one shared (the official code).")
  flags.DEFINE_float("embedding_loss_weight", 1.0, "Weight of the embedding-layer MSE.")
  flags.DEFINE_float("hidden_loss_weight", 1.0, "Weight of the hidden-state MSEs.")
  flags.DEFINE_float("attention_loss_weight", 1.0,
                     "Weight of the MSEs of the unnormalised attention scores.")
  flags.DEFINE_float("attention_kl_loss_weight", 0.0,
                     "Weight of MiniLM's KL of the last layers' attention distributions.")
