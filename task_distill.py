"""Task distillation (TinyBERT) of a fine-tuned BERT classifier into a smaller student.

The teacher is run_classifier.py's output (its output_dir or a checkpoint).
The student learns its layers (--stage=intermediate), then its logits
(--stage=prediction), or both in turn; evaluation, prediction and export are
run_classifier's. See `distillation.downstream` for the outputs.
"""

import cli  # first: Ctrl-C while the rest imports is "<script>: interrupted"

from absl import flags

from classification import flags as task_flags
from distillation import downstream
from distillation import flags as distillation_flags
from training import flags as training_flags

flags.DEFINE_enum("stage", downstream.BOTH, downstream.STAGES,
                  "intermediate: the layer-wise losses; prediction: the logits; both: one "
                  "then the other.")
flags.DEFINE_float("intermediate_epochs", 10.0, "Epochs of the intermediate stage.")
flags.DEFINE_float("prediction_epochs", 3.0, "Epochs of the prediction stage.")
flags.DEFINE_float("temperature", 1.0, "Temperature of the prediction stage's soft labels.")
flags.DEFINE_bool("check_teacher", True,
                  "Evaluate the teacher on dev first and stop when it does no better than a "
                  "constant answer (an un-fine-tuned teacher).")
task_flags.define_task_flags()
flags.adopt_module_key_flags(task_flags)
distillation_flags.define_distillation_flags(
    "The fine-tuned teacher: run_classifier.py's output_dir or a checkpoint with its "
    "classifier layer (Google TF1, HuggingFace or ours).")
flags.adopt_module_key_flags(distillation_flags)
training_flags.define_runtime_flags()
flags.adopt_module_key_flags(training_flags)


def main(argv):
  del argv
  downstream.run_task_distill(training_flags.options_from_flags(
      downstream.TaskDistillOptions, task_options=task_flags.task_options()))


if __name__ == "__main__":
  flags.mark_flags_as_required(["data_dir", "task_name", "vocab_file", "output_dir",
                                "teacher_init_checkpoint"])
  cli.run(main, interrupted_note=training_flags.interrupted_note,
          terminated_note=training_flags.terminated_note)
