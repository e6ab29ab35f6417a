"""TinyBERT's data augmentation of a task's training file, for task distillation.

Writes `train_aug.tsv` (by default beside the task's train.tsv): each row, then
`--n_aug` rewrites of it whose words are replaced, with probability `--p_t`, by
one of the `--top_k` predictions of a BERT masked LM (`--init_checkpoint`, with
its masked-LM head) or, for words of several WordPieces, GloVe neighbours
(`--glove_file`). `run_classifier.py --aug_train` trains on it. See
`distillation.augment` for the algorithm and how it differs from TinyBERT's script.
"""

import cli  # first: Ctrl-C while the rest imports is "<script>: interrupted"

from classification import options
from distillation import augment

options.define_flags(augment.AugmentOptions)


def main(argv):
  del argv
  augment.run(options.from_flags(augment.AugmentOptions))


if __name__ == "__main__":
  cli.run(main)
