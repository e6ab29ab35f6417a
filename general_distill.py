"""General distillation (TinyBERT) of a BERT teacher into a smaller student, on the
pre-training TFRecords of create_pretraining_data.py.

The student's checkpoints in output_dir are `--init_checkpoint`s for
run_classifier.py and extract_features.py; a rerun resumes. See
`distillation.general` for the outputs.
"""

from absl import flags

import cli
from distillation import general
from distillation.model import PROJECTIONS
from training import flags as training_flags

flags.DEFINE_string("input_file", None, "Input TF example files (can be a glob or comma "
                    "separated), as create_pretraining_data.py writes them.")
flags.DEFINE_string("teacher_init_checkpoint", None,
                    "The teacher's weights (Google TF1, HuggingFace or ours).")
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
flags.DEFINE_string("output_dir", None, "Where the student's checkpoints are written.")
flags.DEFINE_integer("max_seq_length", 128, "The records' max_seq_length.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "The records' max_predictions_per_seq.")
flags.DEFINE_bool("restore_masked_tokens", True,
                  "Put the original tokens back at the masked positions (TinyBERT's choice), "
                  "so both models read the original text.")
flags.DEFINE_integer("train_batch_size", 32, "Total batch size for training.")
flags.DEFINE_float("learning_rate", 5e-5, "The initial learning rate for Adam.")
flags.DEFINE_integer("num_train_steps", 100000, "Number of training steps.")
flags.DEFINE_integer("num_warmup_steps", 10000, "Number of warmup steps.")
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
training_flags.define_runtime_flags()
flags.adopt_module_key_flags(training_flags)


def main(argv):
  del argv
  general.run(training_flags.options_from_flags(general.GeneralDistillOptions))


if __name__ == "__main__":
  flags.mark_flags_as_required(["input_file", "teacher_init_checkpoint", "output_dir"])
  cli.run(main, interrupted_note=training_flags.interrupted_note)
