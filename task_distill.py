"""Task distillation (TinyBERT) of a fine-tuned BERT classifier into a smaller student.

The teacher is run_classifier.py's output (its output_dir or a checkpoint).
The student learns its layers (--stage=intermediate), then its logits
(--stage=prediction), or both in turn; evaluation, prediction and export are
run_classifier's. See `distillation.downstream` for the outputs.
"""

import cli  # first: Ctrl-C while the rest imports is "<script>: interrupted"

from classification import options
from distillation import downstream
from distillation.options import TaskDistillOptions
from training import flags as training_flags

options.define_flags(TaskDistillOptions)


def main(argv):
  del argv
  downstream.run_task_distill(options.from_flags(TaskDistillOptions))


if __name__ == "__main__":
  cli.run(main, interrupted_note=training_flags.interrupted_note,
          terminated_note=training_flags.terminated_note)
