"""TinyBERT's data augmentation of a task's training file, for task distillation.

Writes `train_aug.tsv` (by default beside the task's train.tsv): each row, then
`--n_aug` rewrites of it whose words are replaced, with probability `--p_t`, by
one of the `--top_k` predictions of a BERT masked LM (`--init_checkpoint`, with
its masked-LM head) or, for words of several WordPieces, GloVe neighbours
(`--glove_file`). `run_classifier.py --aug_train` trains on it. See
`distillation.augment` for the algorithm and how it differs from TinyBERT's script.
"""

import cli  # first: Ctrl-C while the rest imports is "<script>: interrupted"

from absl import flags

from classification import flags as task_flags
from distillation import augment
from training import flags as training_flags

flags.DEFINE_string("output_file", None,
                    "Where to write; default: train_aug.tsv beside the training file. With "
                    "--num_shards > 1, -<shard_index>-of-<num_shards> is appended.")
flags.DEFINE_bool("overwrite", False, "Replace an existing output file.")
flags.DEFINE_string("init_checkpoint", None, "A BERT checkpoint with its masked-LM head "
                    "(Google TF1, HuggingFace or ours).")
flags.DEFINE_string("bert_config_file", None, "bert_config.json (or HF config.json). Default: "
                    "the one stored with init_checkpoint.")
task_flags.define_data_flags()
flags.adopt_module_key_flags(task_flags)
flags.DEFINE_float("p_t", 0.4, "Probability of replacing each word made of letters.")
flags.DEFINE_integer("n_aug", 20, "Rewrites of each row.")
flags.DEFINE_integer("top_k", 15, "Candidates per word: masked-LM predictions or GloVe "
                     "neighbours.")
flags.DEFINE_string("glove_file", None, "GloVe vectors in text format (`word v1 ... vd` a "
                    "line), for words of several WordPieces; without it they are kept.")
flags.DEFINE_integer("glove_max_words", 100000,
                     "Read the first this many GloVe words (the most frequent); 0: all.")
flags.DEFINE_integer("seed", 12345, "Random seed of the replacements.")
flags.DEFINE_integer("batch_size", 64, "Masked-LM inputs per forward pass.")
flags.DEFINE_integer("num_shards", 1, "Split the work over this many processes...")
flags.DEFINE_integer("shard_index", 0, "...of which this is one (0-based): it augments the "
                     "rows i with i % num_shards == shard_index.")


def main(argv):
  del argv
  augment.run(training_flags.options_from_flags(augment.AugmentOptions,
                                                task_options=task_flags.task_options()))


if __name__ == "__main__":
  flags.mark_flags_as_required(["task_name", "data_dir", "init_checkpoint", "vocab_file"])
  cli.run(main)
