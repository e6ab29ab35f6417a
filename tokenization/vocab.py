"""WordPiece vocabulary files: one token per line, the line number is the id."""

import collections

from cli import UserError
import fileio


class VocabError(UserError, ValueError):
  """A vocabulary file that cannot be used (missing, empty, duplicate or blank tokens)."""


# What every script's inputs need: [CLS] and [SEP] frame the segments, [UNK] stands for a word
# the vocabulary cannot spell. Masking (pre-training data, augmentation) needs [MASK] too.
SPECIAL_TOKENS = ("[CLS]", "[SEP]", "[UNK]")
MASK_TOKEN = "[MASK]"


def check_special_tokens(vocab, vocab_file, tokens=SPECIAL_TOKENS):
  """Raises VocabError naming the `tokens` that `vocab` (its tokens, read from `vocab_file`)
  lacks: caught when the vocabulary is loaded, not at the first unknown word."""
  missing = [t for t in tokens if t not in vocab]
  if missing:
    raise VocabError(f"vocab file {vocab_file!r} lacks the special token(s) "
                     f"{', '.join(missing)}: is it a BERT WordPiece vocabulary?")


def load_vocab(vocab_file):
  """Reads `vocab_file` into an ordered {token: id} dict.

  As in Google's release, surrounding whitespace is stripped from every line and
  ids follow file order. Unlike it, problems that would silently corrupt ids
  (a missing or empty file, a blank line, a repeated token) raise VocabError
  naming the file and the line.
  """
  problem = fileio.missing_file(vocab_file)
  if problem:
    raise VocabError(f"vocab file {vocab_file!r}: {problem}")
  vocab = collections.OrderedDict()
  for line_no, line in fileio.utf8_lines(vocab_file, VocabError):
    token = line.strip()
    if not token:
      raise VocabError(f"{vocab_file}:{line_no}: blank line in vocabulary "
                       f"(ids after it would shift)")
    if token in vocab:
      raise VocabError(f"{vocab_file}:{line_no}: duplicate token {token!r} "
                       f"(first seen at line {vocab[token] + 1})")
    vocab[token] = len(vocab)
  if not vocab:
    raise VocabError(f"vocab file is empty: {vocab_file!r}")
  return vocab


def load_wordpiece_vocab(vocab_file):
  """`load_vocab`, then `check_special_tokens`: the in-graph tokenizers' vocabulary."""
  vocab = load_vocab(vocab_file)
  check_special_tokens(vocab, vocab_file)
  return vocab
