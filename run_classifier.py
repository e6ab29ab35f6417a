"""Fine-tune BERT on a classification or regression task (Google's flags and outputs).

Accepts Google TF1 checkpoints, HuggingFace model directories and our TF2
checkpoints as `init_checkpoint`; writes `eval_results.txt`, `test_results.tsv`
and, with `--export_dir`, a SavedModel that also takes raw text.
"""

import cli  # first: Ctrl-C while the rest imports is "<script>: interrupted"

from absl import flags

from classification import flags as task_flags
from classification import run
from training import flags as training_flags

flags.DEFINE_string("bert_config_file", None,
                    "bert_config.json (or HF config.json). Default: the one stored with "
                    "init_checkpoint (e.g. an HF directory's config.json).")
flags.DEFINE_string("init_checkpoint", None, "Initial weights: Google TF1, HF directory or ours.")
flags.DEFINE_float("num_train_epochs", 3.0, "Total number of training epochs to perform.")
task_flags.define_task_flags()
flags.adopt_module_key_flags(task_flags)
training_flags.define_runtime_flags()
flags.adopt_module_key_flags(training_flags)


def main(argv):
  del argv
  run.run_classifier(training_flags.options_from_flags(run.ClassifierOptions,
                                                       task_options=task_flags.task_options()))


if __name__ == "__main__":
  flags.mark_flags_as_required(["data_dir", "task_name", "vocab_file", "output_dir"])
  cli.run(main, interrupted_note=training_flags.interrupted_note,
          terminated_note=training_flags.terminated_note)
