"""WordPiece vocabulary files: one token per line, the line number is the id."""

import collections

from cli import UserError
import fileio


class VocabError(UserError, ValueError):
  """A vocabulary file that cannot be used (missing, empty, duplicate or blank tokens)."""


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
  """`load_vocab` for the in-graph tokenizers: raises VocabError unless [CLS], [SEP] and [UNK]
  are in it (packing and WordPiece need them)."""
  vocab = load_vocab(vocab_file)
  for token in ("[CLS]", "[SEP]", "[UNK]"):
    if token not in vocab:
      raise VocabError(f"vocab file {vocab_file!r} has no {token} token")
  return vocab
