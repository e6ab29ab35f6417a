"""Builds a WordPiece vocab.txt (Google's layout) from plain-text files.

Example:
  python build_vocab.py --input_file=sample_data/corpus.txt,sample_data/sentiment/train.tsv \
      --output_file=sample_data/vocab.txt --vocab_size=3000
"""

import cli  # first: Ctrl-C while the rest imports is "<script>: interrupted"

import dataclasses

from absl import logging

from cli import options
from cli.options import option, required
from tokenization import vocab_builder


@dataclasses.dataclass(frozen=True, kw_only=True)
class VocabOptions:
  """build_vocab.py's flags."""
  input_file: str = required(
      "Comma-separated glob patterns of UTF-8 text files; every line is read as text.")
  output_file: str = required("Where to write the vocabulary, one token per line.")
  vocab_size: int = option(3000, "Largest vocabulary size, special tokens included.")
  do_lower_case: bool = option(
      True, "Lower-case and strip accents before counting (uncased vocabulary).")
  min_frequency: int = option(
      2, "Pieces seen fewer times are not learned; characters are always kept.")
  overwrite: bool = option(False, "Replace existing output files.")


options.define_flags(VocabOptions)


def main(_):
  logging.set_verbosity(logging.INFO)
  o = options.from_flags(VocabOptions)
  vocab_builder.build_vocab_file(o.input_file, o.output_file, o.vocab_size,
                                 do_lower_case=o.do_lower_case, min_frequency=o.min_frequency,
                                 overwrite=o.overwrite)


if __name__ == "__main__":
  cli.run(main)
