"""Pre-trains BERT (masked LM + next sentence) on TFRecords; Google's flags and outputs.

Checkpoints in output_dir resume training and are `init_checkpoint`s for
run_classifier.py / extract_features.py. See README.md, "run_pretraining.py".
"""

import cli  # first: Ctrl-C while the rest imports is "<script>: interrupted"

from cli import options
import pretraining
from training import flags as training_flags

options.define_flags(pretraining.PretrainingOptions)


def main(argv):
  del argv
  pretraining.run(options.from_flags(pretraining.PretrainingOptions))


if __name__ == "__main__":
  cli.run(main, interrupted_note=training_flags.interrupted_note,
          terminated_note=training_flags.terminated_note, saves_on_signal=True)
