"""Pre-trains BERT (masked LM + next sentence) on TFRecords; Google's flags and outputs.

Checkpoints in output_dir resume training and are `init_checkpoint`s for
run_classifier.py / extract_features.py. See README.md, "Pre-training".
"""

import cli  # first: Ctrl-C while the rest imports is "<script>: interrupted"

from absl import flags

import pretraining
from training import flags as training_flags

flags.DEFINE_string("bert_config_file", None,
                    "bert_config.json (or HF config.json). Default: the one stored with "
                    "init_checkpoint (e.g. an HF directory's config.json).")
flags.DEFINE_string("input_file", None, "Input TF example files (can be a glob or comma "
                    "separated).")
flags.DEFINE_string("output_dir", None,
                    "The output directory where the model checkpoints will be written.")
flags.DEFINE_string("init_checkpoint", None,
                    "Initial checkpoint (Google TF1, HuggingFace or ours); only used when "
                    "output_dir has no checkpoint yet.")
flags.DEFINE_integer("max_seq_length", 128, "The maximum total input sequence length after "
                     "WordPiece tokenization; must match the data.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Maximum number of masked LM predictions "
                     "per sequence; must match the data.")
flags.DEFINE_bool("do_train", False, "Whether to run training.")
flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.")
flags.DEFINE_integer("train_batch_size", 32, "Total batch size for training.")
flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
flags.DEFINE_float("learning_rate", 5e-5, "The initial learning rate for Adam.")
flags.DEFINE_integer("num_train_steps", 100000, "Number of training steps.")
flags.DEFINE_integer("num_warmup_steps", 10000, "Number of warmup steps.")
flags.DEFINE_integer("max_eval_steps", 100, "Maximum number of eval steps.")
flags.DEFINE_string("vocab_file", None,
                    "Records written with --dynamic_masking: the vocabulary they were made with.")
flags.DEFINE_float("masked_lm_prob", 0.15,
                   "Records written with --dynamic_masking: the share of tokens to mask.")
flags.DEFINE_bool("do_whole_word_mask", False,
                  "Records written with --dynamic_masking: mask whole words.")
training_flags.define_runtime_flags()
flags.adopt_module_key_flags(training_flags)


def main(argv):
  del argv
  pretraining.run(training_flags.options_from_flags(pretraining.PretrainingOptions))


if __name__ == "__main__":
  flags.mark_flags_as_required(["input_file", "output_dir"])
  cli.run(main, interrupted_note=training_flags.interrupted_note,
          terminated_note=training_flags.terminated_note)
