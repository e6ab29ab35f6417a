"""Task distillation (TinyBERT) of a fine-tuned BERT into a smaller student.

The teacher is run_classifier.py's output (its output_dir or a checkpoint),
or, with --task_name=squad, run_squad.py's. The student learns its layers
(--stage=intermediate), then the teacher's outputs (--stage=prediction), or
both in turn. With --task_name=squad the data flags, their defaults
(max_seq_length 384) and the outputs are run_squad's, else run_classifier's.
See `distillation.downstream` for the outputs.
"""

import cli  # first: Ctrl-C while the rest imports is "<script>: interrupted"

from distillation import downstream
from distillation import options
from training import flags as training_flags

options.define_task_distill_flags()


def main(argv):
  del argv
  downstream.run_task_distill(options.task_distill_options_from_flags())


if __name__ == "__main__":
  cli.run(main, interrupted_note=training_flags.interrupted_note,
          terminated_note=training_flags.terminated_note, saves_on_signal=True)
