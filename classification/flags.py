"""The task flags of run_classifier.py, task_distill.py and augment_data.py, defined once.

Google's names. A script calls `define_task_flags()` (or `define_data_flags()`,
the data's alone) next to its own flags, then
`flags.adopt_module_key_flags(classification.flags)` so that `--help` lists
them, and passes `task_options()` as its options' `task_options`.
"""

from absl import flags

FLAGS = flags.FLAGS


def define_data_flags():
  """The flags that say what the task's data is: name, files, tokenization, generic columns."""
  flags.DEFINE_string("data_dir", None, "Directory with the task's train/dev/test files.")
  flags.DEFINE_string("task_name", None, "The task (cola, mrpc, sst-2, sts-b, ..., generic).")
  flags.DEFINE_string("vocab_file", None, "The vocabulary file the model was trained on.")
  flags.DEFINE_bool("do_lower_case", True, "Lower-case the input (uncased models).")
  flags.DEFINE_integer("max_seq_length", 128, "Maximum total sequence length after WordPiece.")
  # The generic task's options (see the README).
  flags.DEFINE_string("text_a_column", None, "generic: column (name or index) of the text.")
  flags.DEFINE_string("text_b_column", None, "generic: column of the second text, if any.")
  flags.DEFINE_string("label_column", None, "generic: column of the label.")
  flags.DEFINE_bool("header", True, "generic: the files have a header row.")
  flags.DEFINE_string("delimiter", None, "generic: field separator (default by extension).")
  flags.DEFINE_bool("regression", False, "generic: float labels (regression).")
  flags.DEFINE_bool("skip_bad_rows", False, "Skip (and log) malformed rows instead of failing.")
  flags.DEFINE_string("language", None, "xnli: the language (default zh).")


def define_task_flags():
  """`define_data_flags`, then the mode, batch, training, export and aug_train flags."""
  define_data_flags()
  flags.DEFINE_string("output_dir", None,
                      "Where checkpoints, TFRecords and results are written.")
  flags.DEFINE_bool("do_train", False, "Whether to run training.")
  flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.")
  flags.DEFINE_bool("do_predict", False, "Whether to run the model on the test set.")
  flags.DEFINE_integer("train_batch_size", 32, "Total batch size for training.")
  flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
  flags.DEFINE_integer("predict_batch_size", 8, "Total batch size for predict.")
  flags.DEFINE_float("learning_rate", 5e-5, "The initial learning rate for Adam.")
  flags.DEFINE_float("warmup_proportion", 0.1,
                     "Proportion of training to perform linear learning rate warmup for.")
  flags.DEFINE_string("export_dir", None, "Write a SavedModel here after training (a new or "
                      "empty directory, outside output_dir).")
  flags.DEFINE_bool("overwrite_export", False,
                    "Replace export_dir when it holds a SavedModel written by run_classifier.")
  flags.DEFINE_bool("aug_train", False, "Train on train_aug.tsv (augment_data.py's output) "
                    "instead of the task's training file.")


def _column(value):
  return int(value) if value is not None and value.isdigit() else value


def task_options():
  """The processor options the flags set for FLAGS.task_name."""
  options = {"skip_bad_rows": FLAGS.skip_bad_rows} if FLAGS.skip_bad_rows else {}
  if getattr(FLAGS, "aug_train", False):  # a task flag: not defined by augment_data.py
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
