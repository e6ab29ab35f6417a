"""Fine-tune BERT on SQuAD v1.1 / v2.0 and predict answers (Google's flags and outputs).

Writes `predictions.json`, `nbest_predictions.json` and, with
--version_2_with_negative, `null_odds.json` to output_dir; when the predict
file has answers, the official metrics go to `eval_results.txt` too. With
`--export_dir`, a SavedModel that answers raw-text questions (`squad.export`).
"""

import cli  # first: Ctrl-C while the rest imports is "<script>: interrupted"

from cli import options
from squad import run
from training import flags as training_flags

options.define_flags(run.SquadOptions)


def main(argv):
  del argv
  run.run_squad(options.from_flags(run.SquadOptions))


if __name__ == "__main__":
  cli.run(main, interrupted_note=training_flags.interrupted_note,
          terminated_note=training_flags.terminated_note, saves_on_signal=True)
