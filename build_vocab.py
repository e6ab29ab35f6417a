"""Builds a WordPiece vocab.txt (Google's layout) from plain-text files.

Example:
  python build_vocab.py --input_file=sample_data/corpus.txt,sample_data/sentiment/train.tsv \
      --output_file=sample_data/vocab.txt --vocab_size=3000
"""

import cli  # first: Ctrl-C while the rest imports is "<script>: interrupted"

from absl import flags
from absl import logging

from tokenization import vocab_builder

FLAGS = flags.FLAGS

flags.DEFINE_string("input_file", None,
                    "Comma-separated glob patterns of UTF-8 text files; every line is read as text.")
flags.DEFINE_string("output_file", None, "Where to write the vocabulary, one token per line.")
flags.DEFINE_integer("vocab_size", 3000,
                     "Largest vocabulary size, special tokens included.")
flags.DEFINE_bool("do_lower_case", True,
                  "Lower-case and strip accents before counting (uncased vocabulary).")
flags.DEFINE_integer("min_frequency", 2,
                     "Pieces seen fewer times are not learned; characters are always kept.")
flags.DEFINE_bool("overwrite", False, "Replace existing output files.")


def main(_):
  logging.set_verbosity(logging.INFO)
  vocab_builder.build_vocab_file(
      FLAGS.input_file, FLAGS.output_file, FLAGS.vocab_size,
      do_lower_case=FLAGS.do_lower_case, min_frequency=FLAGS.min_frequency,
      overwrite=FLAGS.overwrite)


if __name__ == "__main__":
  flags.mark_flags_as_required(["input_file", "output_file"])
  cli.run(main)
