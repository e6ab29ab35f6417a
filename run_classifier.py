"""Fine-tune BERT on a classification or regression task (Google's flags and outputs).

Accepts Google TF1 checkpoints, HuggingFace model directories and our TF2
checkpoints as `init_checkpoint`; writes `eval_results.txt`, `test_results.tsv`
and, with `--export_dir`, a SavedModel that also takes raw text.
"""

import cli  # first: Ctrl-C while the rest imports is "<script>: interrupted"

from classification import options
from classification import run
from training import flags as training_flags

options.define_flags(run.ClassifierOptions)


def main(argv):
  del argv
  run.run_classifier(options.from_flags(run.ClassifierOptions))


if __name__ == "__main__":
  cli.run(main, interrupted_note=training_flags.interrupted_note,
          terminated_note=training_flags.terminated_note, saves_on_signal=True)
