"""Fine-tune BERT on SQuAD v1.1 / v2.0 and predict answers (Google's flags and outputs).

Writes `predictions.json`, `nbest_predictions.json` and, with
--version_2_with_negative, `null_odds.json` to output_dir; when the predict
file has answers, the official metrics go to `eval_results.txt` too. With
`--export_dir`, a SavedModel that answers raw-text questions (`squad.export`).
"""

import cli  # first: Ctrl-C while the rest imports is "<script>: interrupted"

from absl import flags

from squad import run
from training import flags as training_flags

FLAGS = flags.FLAGS

flags.DEFINE_string("bert_config_file", None,
                    "bert_config.json (or HF config.json). Default: the one stored with "
                    "init_checkpoint (e.g. an HF directory's config.json).")
flags.DEFINE_string("vocab_file", None, "The vocabulary file the model was trained on.")
flags.DEFINE_string("output_dir", None, "Where checkpoints, TFRecords and predictions go.")
flags.DEFINE_string("train_file", None, "SQuAD json for training, e.g. train-v1.1.json.")
flags.DEFINE_string("predict_file", None,
                    "SQuAD json for predictions, e.g. dev-v1.1.json or test-v1.1.json.")
flags.DEFINE_string("init_checkpoint", None, "Initial weights: Google TF1, HF directory or ours.")
flags.DEFINE_bool("do_lower_case", True, "Lower-case the input (uncased models).")
flags.DEFINE_integer("max_seq_length", 384, "Maximum total sequence length after WordPiece.")
flags.DEFINE_integer("doc_stride", 128,
                     "How many tokens apart the windows over a long document start.")
flags.DEFINE_integer("max_query_length", 64,
                     "Question tokens kept; longer questions are truncated to this length.")
flags.DEFINE_bool("do_train", False, "Whether to run training.")
flags.DEFINE_bool("do_predict", False, "Whether to run predictions on predict_file.")
flags.DEFINE_integer("train_batch_size", 32, "Total batch size for training.")
flags.DEFINE_integer("predict_batch_size", 8, "Total batch size for predictions.")
flags.DEFINE_float("learning_rate", 5e-5, "The initial learning rate for Adam.")
flags.DEFINE_float("num_train_epochs", 3.0, "Total number of training epochs to perform.")
flags.DEFINE_float("warmup_proportion", 0.1,
                   "Proportion of training to perform linear learning rate warmup for.")
flags.DEFINE_integer("n_best_size", 20,
                     "n-best predictions to keep per question in nbest_predictions.json.")
flags.DEFINE_integer("max_answer_length", 30, "Longest answer, in WordPiece tokens.")
flags.DEFINE_bool("verbose_logging", False,
                  "Log why a prediction could not be aligned to the original text.")
flags.DEFINE_bool("version_2_with_negative", False,
                  "SQuAD 2.0: some questions have no answer in the context.")
flags.DEFINE_float("null_score_diff_threshold", 0.0,
                   "Predict no answer when null score - best non-null score > this.")
flags.DEFINE_bool("tune_null_threshold", False,
                  "v2 with answers in predict_file: write the predictions with the threshold "
                  "that gives the official best F1 there (Google's README recipe in one run).")
flags.DEFINE_string("export_dir", None, "Write a SavedModel that answers raw-text questions "
                    "here after training and predicting (a new or empty directory, outside "
                    "output_dir).")
flags.DEFINE_bool("overwrite_export", False,
                  "Replace export_dir when it holds a SavedModel written by run_squad.")
training_flags.define_runtime_flags()
flags.adopt_module_key_flags(training_flags)


def main(argv):
  del argv
  run.run_squad(training_flags.options_from_flags(run.SquadOptions))


if __name__ == "__main__":
  flags.mark_flags_as_required(["vocab_file", "output_dir"])
  cli.run(main, interrupted_note=training_flags.interrupted_note,
          terminated_note=training_flags.terminated_note)
