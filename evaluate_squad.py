"""Score SQuAD predictions with the official v1.1 or v2.0 metrics (squad.evaluation).

Usage: evaluate_squad.py [flags] data_file pred_file

Prints the metrics as JSON, as evaluate-v1.1.py (one line) and evaluate-v2.0.py
(indented) do, or writes them to --out_file (an existing file only with --overwrite, an
input never). The v2.0 script's option spellings (--na-prob-file, -n, --na-prob-thresh, -t,
--out-file, -o) work too.
"""

import cli  # first: Ctrl-C while the rest imports is "<script>: interrupted"

import dataclasses
import json
from typing import Optional

import fileio
from cli import options
from cli.options import option
from squad import evaluation


@dataclasses.dataclass(frozen=True, kw_only=True)
class EvaluateOptions:
  """evaluate_squad.py's flags (the official v2.0 script's spellings as aliases)."""
  na_prob_file: Optional[str] = option(
      None, "v2.0: JSON {question id: null probability or odds}, e.g. run_squad's "
      "null_odds.json; adds best_exact/best_f1 and their thresholds.",
      short_name="n", aliases=("na-prob-file",))
  na_prob_thresh: float = option(
      1.0, "v2.0: a question whose null probability is above this counts as predicted "
      "\"no answer\".", short_name="t", aliases=("na-prob-thresh",))
  out_file: Optional[str] = option(
      None, "Write the metrics JSON here instead of printing it.", short_name="o",
      aliases=("out-file",))
  overwrite: bool = option(False, "Replace existing output files.")
  version: str = option(
      "auto", "SQuAD version; auto: 2.0 if the dataset's `version` says so or a question has "
      "`is_impossible`.", choices=("auto", evaluation.V1, evaluation.V2))


options.define_flags(EvaluateOptions)


def main(argv):
  if len(argv) != 3:
    raise cli.FlagError(f"expected two arguments, data_file and pred_file; got {len(argv) - 1}")
  data_file, pred_file = argv[1:]
  o = options.from_flags(EvaluateOptions)
  if o.out_file:
    fileio.check_outputs([o.out_file], o.overwrite, {
        "data_file": data_file, "pred_file": pred_file, "--na_prob_file": o.na_prob_file})
  dataset = evaluation.read_dataset(data_file)
  version = evaluation.detect_version(dataset) if o.version == "auto" else o.version
  metrics = evaluation.evaluate(
      dataset, evaluation.read_predictions(pred_file),
      evaluation.read_na_probs(o.na_prob_file) if o.na_prob_file else None,
      o.na_prob_thresh, version, pred_source=pred_file, na_prob_source=o.na_prob_file)
  if o.out_file:
    fileio.atomic_write_text(o.out_file, json.dumps(metrics) + "\n", o.overwrite)
  else:
    print(json.dumps(metrics, indent=2 if version == evaluation.V2 else None))


if __name__ == "__main__":
  cli.run(main)
