"""Builds a WordPiece vocabulary file in the layout of Google's BERT vocabularies.

Words are split with our `BasicTokenizer` (so the pieces match what
`FullTokenizer` will look up), counted, and handed to tensorflow-text's
WordPiece learner (`wordpiece_tokenizer_learner_lib.learn`, the algorithm behind
`bert_vocab_from_dataset`; called directly because that wrapper splits words
with tensorflow-text's own BasicTokenizer). The result is laid out as Google's
vocabularies are: `[PAD]`, `[unused*]`, `[UNK]`, `[CLS]`, `[SEP]`, `[MASK]`,
then every character of the input, then the `##` form of every character,
then the learned pieces, most frequent first. Because every character is in
the vocabulary, text made of the input's characters never maps to `[UNK]`
(words longer than `WordpieceTokenizer`'s 200-character limit are
skipped: they map to `[UNK]` whole).

Importing this module imports TensorFlow (through tensorflow-text); the rest
of `tokenization` does not.
"""

import collections

from absl import logging
from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

from cli import FlagError
from fileio import InputError, atomic_output, check_outputs, resolve_input_files, utf8_lines
from tokenization.basic import BasicTokenizer

JOINER = "##"
# WordpieceTokenizer maps longer words to [UNK] whole, so they teach nothing.
MAX_WORD_CHARS = 200


def special_tokens(num_unused=10):
  """Google's leading tokens: [PAD], [unused0..num_unused-1], [UNK], [CLS], [SEP], [MASK]."""
  return (["[PAD]"] + [f"[unused{i}]" for i in range(num_unused)]
          + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"])


def count_words(files, do_lower_case=True):
  """Counts the BasicTokenizer words of every line of `files` (read as UTF-8 text)."""
  tokenizer = BasicTokenizer(do_lower_case=do_lower_case)
  counts = collections.Counter()
  for path in files:
    for _, line in utf8_lines(path):
      counts.update(tokenizer.tokenize(line))
    logging.info("Counted %s: %d distinct words so far", path, len(counts))
  return counts


def learn_vocab(word_counts, vocab_size, min_frequency=2, num_unused=10, source="the input"):
  """Learns a WordPiece vocabulary (a list of tokens, id = index) from {word: count}.

  Args:
    word_counts: mapping of word to count, words as BasicTokenizer returns them.
    vocab_size: the largest vocabulary wanted, special tokens included. The
      learner searches a frequency threshold giving between 95% and 100% of it;
      a small corpus may give fewer tokens.
    min_frequency: pieces seen fewer times than this are never learned (single
      characters are always kept).
    num_unused: number of `[unusedN]` tokens after `[PAD]`.
    source: what the words were read from, for the error of no words.

  Raises:
    ValueError: `min_frequency` not positive, no words, or `vocab_size` too small for the
      special tokens and the characters with their `##` forms.
  """
  if min_frequency < 1:
    raise FlagError(f"--min_frequency must be positive, got {min_frequency}")
  word_counts = {w: c for w, c in word_counts.items() if len(w) <= MAX_WORD_CHARS}
  if not word_counts:
    raise InputError(f"{source} holds no words: cannot build a vocabulary")
  reserved = special_tokens(num_unused)
  chars = sorted({ch for word in word_counts for ch in word})
  char_tokens = chars + [JOINER + ch for ch in chars]
  needed = len(reserved) + len(char_tokens)
  if vocab_size < needed:
    raise FlagError(
        f"--vocab_size {vocab_size} is too small: the {len(reserved)} special tokens "
        f"and the {len(chars)} characters of the input with their ## forms need {needed}")
  # Most frequent first, ties by word: a fixed input order makes the output
  # independent of file and Counter order.
  ordered = sorted(word_counts.items(), key=lambda wc: (-wc[1], wc[0]))
  learned = learner.learn(
      ordered, vocab_size, reserved,
      lower_thresh=min_frequency,
      max_token_length=max(len(w) for w, _ in ordered),
      max_unique_chars=len(chars),
      include_joiner_token=True,
      joiner=JOINER)
  fixed = set(reserved) | set(char_tokens)
  pieces = [t for t in learned if t not in fixed]
  # The learner's threshold search can stop above the target; its pieces are
  # most frequent first, so the cut drops the rarest.
  return (reserved + char_tokens + pieces)[:vocab_size]


def write_vocab(tokens, output_file, overwrite=True):
  """Writes one token per line (UTF-8, LF) atomically: a temp file renamed over `output_file`
  (one another run wrote meanwhile is kept unless `overwrite`)."""
  with atomic_output(output_file, overwrite=overwrite) as f:
    f.writelines(t + "\n" for t in tokens)


def build_vocab_file(input_file, output_file, vocab_size, do_lower_case=True,
                     min_frequency=2, num_unused=10, overwrite=False):
  """Reads the files matched by `input_file`, learns a vocabulary, writes it; returns the tokens.

  An existing `output_file` is replaced only with `overwrite`, an input file never.
  """
  files = resolve_input_files(input_file)
  check_outputs([output_file], overwrite, {"--input_file": files})
  logging.info("Reading %d file(s)", len(files))
  counts = count_words(files, do_lower_case=do_lower_case)
  logging.info("Learning a vocabulary of at most %d tokens from %d distinct words",
               vocab_size, len(counts))
  source = (f"--input_file {files[0]}" if len(files) == 1
            else f"--input_file {input_file!r} ({len(files)} files)")
  tokens = learn_vocab(counts, vocab_size, min_frequency=min_frequency,
                       num_unused=num_unused, source=source)
  write_vocab(tokens, output_file, overwrite)
  logging.info("Wrote %d tokens to %s", len(tokens), output_file)
  return tokens
