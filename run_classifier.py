"""Fine-tune BERT on a classification or regression task (Google's flags and outputs).

Accepts Google TF1 checkpoints, HuggingFace model directories and our TF2
checkpoints as `init_checkpoint`; writes `eval_results.txt`, `test_results.tsv`
and, with `--export_dir`, a SavedModel that also takes raw text.
"""

from absl import flags

from classification import run
import cli
from training import flags as training_flags

FLAGS = flags.FLAGS

flags.DEFINE_string("data_dir", None, "Directory with the task's train/dev/test files.")
flags.DEFINE_string("bert_config_file", None,
                    "bert_config.json (or HF config.json). Default: the one stored with "
                    "init_checkpoint (e.g. an HF directory's config.json).")
flags.DEFINE_string("task_name", None, "The task (cola, mrpc, sst-2, sts-b, ..., generic).")
flags.DEFINE_string("vocab_file", None, "The vocabulary file the model was trained on.")
flags.DEFINE_string("output_dir", None, "Where checkpoints, TFRecords and results are written.")
flags.DEFINE_string("init_checkpoint", None, "Initial weights: Google TF1, HF directory or ours.")
flags.DEFINE_bool("do_lower_case", True, "Lower-case the input (uncased models).")
flags.DEFINE_integer("max_seq_length", 128, "Maximum total sequence length after WordPiece.")
flags.DEFINE_bool("do_train", False, "Whether to run training.")
flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.")
flags.DEFINE_bool("do_predict", False, "Whether to run the model on the test set.")
flags.DEFINE_integer("train_batch_size", 32, "Total batch size for training.")
flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
flags.DEFINE_integer("predict_batch_size", 8, "Total batch size for predict.")
flags.DEFINE_float("learning_rate", 5e-5, "The initial learning rate for Adam.")
flags.DEFINE_float("num_train_epochs", 3.0, "Total number of training epochs to perform.")
flags.DEFINE_float("warmup_proportion", 0.1,
                   "Proportion of training to perform linear learning rate warmup for.")
training_flags.define_runtime_flags()
flags.adopt_module_key_flags(training_flags)
flags.DEFINE_string("export_dir", None, "Write a SavedModel here after training (a new or "
                    "empty directory, outside output_dir).")
flags.DEFINE_bool("overwrite_export", False,
                  "Replace export_dir when it holds a SavedModel written by run_classifier.")
# The generic task's options (see the README).
flags.DEFINE_string("text_a_column", None, "generic: column (name or index) of the text.")
flags.DEFINE_string("text_b_column", None, "generic: column of the second text, if any.")
flags.DEFINE_string("label_column", None, "generic: column of the label.")
flags.DEFINE_bool("header", True, "generic: the files have a header row.")
flags.DEFINE_string("delimiter", None, "generic: field separator (default by extension).")
flags.DEFINE_bool("regression", False, "generic: float labels (regression).")
flags.DEFINE_bool("skip_bad_rows", False, "Skip (and log) malformed rows instead of failing.")
flags.DEFINE_string("language", None, "xnli: the language (default zh).")
flags.DEFINE_bool("aug_train", False, "Train on train_aug.tsv, augment_data.py's output.")


def _column(value):
  return int(value) if value is not None and value.isdigit() else value


def task_options():
  """The processor options the flags set for FLAGS.task_name."""
  options = {"skip_bad_rows": FLAGS.skip_bad_rows} if FLAGS.skip_bad_rows else {}
  if FLAGS.aug_train:
    options["aug_train"] = True
  name = FLAGS.task_name.strip().lower()
  if name == "generic":
    options.update(text_a_column=_column(FLAGS.text_a_column),
                   text_b_column=_column(FLAGS.text_b_column),
                   label_column=_column(FLAGS.label_column), header=FLAGS.header,
                   delimiter=FLAGS.delimiter, regression=FLAGS.regression)
  elif name == "xnli" and FLAGS.language:
    options["language"] = FLAGS.language
  return options


def main(argv):
  del argv
  run.run_classifier(training_flags.options_from_flags(run.ClassifierOptions,
                                                       task_options=task_options()))


if __name__ == "__main__":
  flags.mark_flags_as_required(["data_dir", "task_name", "vocab_file", "output_dir"])
  cli.run(main, interrupted_note=training_flags.interrupted_note)
