"""General distillation (TinyBERT) of a BERT teacher into a smaller student, on the
pre-training TFRecords of create_pretraining_data.py.

The student's checkpoints in output_dir are `--init_checkpoint`s for
run_classifier.py and extract_features.py; a rerun resumes. See
`distillation.general` for the outputs.
"""

import cli  # first: Ctrl-C while the rest imports is "<script>: interrupted"

from cli import options
from distillation import general
from training import flags as training_flags

options.define_flags(general.GeneralDistillOptions)


def main(argv):
  del argv
  general.run(options.from_flags(general.GeneralDistillOptions))


if __name__ == "__main__":
  cli.run(main, interrupted_note=training_flags.interrupted_note,
          terminated_note=training_flags.terminated_note, saves_on_signal=True)
