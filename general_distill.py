"""General distillation (TinyBERT) of a BERT teacher into a smaller student, on the
pre-training TFRecords of create_pretraining_data.py.

The student's checkpoints in output_dir are `--init_checkpoint`s for
run_classifier.py and extract_features.py; a rerun resumes. See
`distillation.general` for the outputs.
"""

import cli  # first: Ctrl-C while the rest imports is "<script>: interrupted"

from absl import flags

from distillation import flags as distillation_flags
from distillation import general
from training import flags as training_flags

flags.DEFINE_string("input_file", None, "Input TF example files (can be a glob or comma "
                    "separated), as create_pretraining_data.py writes them.")
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
distillation_flags.define_distillation_flags(
    "The teacher's weights (Google TF1, HuggingFace or ours).")
flags.adopt_module_key_flags(distillation_flags)
training_flags.define_runtime_flags()
flags.adopt_module_key_flags(training_flags)


def main(argv):
  del argv
  general.run(training_flags.options_from_flags(general.GeneralDistillOptions))


if __name__ == "__main__":
  flags.mark_flags_as_required(["input_file", "teacher_init_checkpoint", "output_dir"])
  cli.run(main, interrupted_note=training_flags.interrupted_note,
          terminated_note=training_flags.terminated_note)
