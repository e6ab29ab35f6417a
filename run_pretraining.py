"""Pre-trains BERT (masked LM + next sentence) on TFRecords; Google's flags and outputs.

Checkpoints in output_dir resume training and are `init_checkpoint`s for
run_classifier.py / extract_features.py. See README.md, "Pre-training".
"""

import dataclasses
import sys

from absl import app, flags

import modeling
import pretraining
from training import flags as training_flags
from training import loop

flags.DEFINE_string("bert_config_file", None,
                    "The config json file corresponding to the pre-trained BERT model.")
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
flags.DEFINE_integer("save_checkpoints_steps", 1000, "How often to save the model checkpoint.")
flags.DEFINE_integer("iterations_per_loop", 1000, "Steps per compiled training loop.")
flags.DEFINE_integer("max_eval_steps", 100, "Maximum number of eval steps.")
training_flags.define_runtime_flags()
flags.DEFINE_enum("optimizer", "adamw", ["adamw", "lamb"],
                  "adamw = Google's AdamWeightDecay; lamb = LAMB.")
flags.DEFINE_integer("gradient_accumulation_steps", 1,
                     "Batches of train_batch_size summed into one optimizer step.")
flags.DEFINE_integer("keep_checkpoint_max", 5, "Checkpoints kept in output_dir.")

FLAGS = flags.FLAGS


def main(argv):
  del argv
  names = [f.name for f in dataclasses.fields(pretraining.RunConfig)]
  config = pretraining.RunConfig(**{name: getattr(FLAGS, name) for name in names})
  try:
    pretraining.run(config)
  except (pretraining.InputError, modeling.ConfigError, modeling.CheckpointError,
          loop.NonFiniteLossError, FileNotFoundError, ValueError) as e:
    print(f"run_pretraining: error: {e}", file=sys.stderr)
    return 1
  return 0


if __name__ == "__main__":
  flags.mark_flags_as_required(["bert_config_file", "input_file", "output_dir"])
  app.run(lambda argv: sys.exit(main(argv)))
