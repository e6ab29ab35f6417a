"""Score SQuAD predictions with the official v1.1 or v2.0 metrics (squad.evaluation).

Usage: evaluate_squad.py [flags] data_file pred_file

Prints the metrics as JSON, as evaluate-v1.1.py (one line) and evaluate-v2.0.py
(indented) do, or writes them to --out_file (an existing file only with --overwrite, an
input never). The v2.0 script's option spellings (--na-prob-file, -n, --na-prob-thresh, -t,
--out-file, -o) work too.
"""

import cli  # first: Ctrl-C while the rest imports is "<script>: interrupted"

import json

from absl import flags

import fileio
from squad import evaluation

FLAGS = flags.FLAGS

flags.DEFINE_string("na_prob_file", None,
                    "v2.0: JSON {question id: null probability or odds}, e.g. run_squad's "
                    "null_odds.json; adds best_exact/best_f1 and their thresholds.",
                    short_name="n")
flags.DEFINE_float("na_prob_thresh", 1.0,
                   "v2.0: a question whose null probability is above this counts as "
                   "predicted \"no answer\".", short_name="t")
flags.DEFINE_string("out_file", None, "Write the metrics JSON here instead of printing it.",
                    short_name="o")
flags.DEFINE_bool("overwrite", False, "Replace existing output files.")
flags.DEFINE_enum("version", "auto", ["auto", evaluation.V1, evaluation.V2],
                  "SQuAD version; auto: 2.0 if the dataset's `version` says so or a question "
                  "has `is_impossible`.")
for _name in ("na_prob_file", "na_prob_thresh", "out_file"):
  flags.DEFINE_alias(_name.replace("_", "-"), _name)


def main(argv):
  if len(argv) != 3:
    raise cli.FlagError(f"expected two arguments, data_file and pred_file; got {len(argv) - 1}")
  data_file, pred_file = argv[1:]
  if FLAGS.out_file:
    fileio.check_outputs([FLAGS.out_file], FLAGS.overwrite, {
        "data_file": data_file, "pred_file": pred_file, "--na_prob_file": FLAGS.na_prob_file})
  dataset = evaluation.read_dataset(data_file)
  version = evaluation.detect_version(dataset) if FLAGS.version == "auto" else FLAGS.version
  metrics = evaluation.evaluate(
      dataset, evaluation.read_predictions(pred_file),
      evaluation.read_na_probs(FLAGS.na_prob_file) if FLAGS.na_prob_file else None,
      FLAGS.na_prob_thresh, version, pred_source=pred_file, na_prob_source=FLAGS.na_prob_file)
  if FLAGS.out_file:
    fileio.atomic_write_text(FLAGS.out_file, json.dumps(metrics) + "\n", FLAGS.overwrite)
  else:
    print(json.dumps(metrics, indent=2 if version == evaluation.V2 else None))


if __name__ == "__main__":
  cli.run(main)
