"""FullTokenizer (BasicTokenizer + WordpieceTokenizer) and the checkpoint/casing check."""

import os
import re

from absl import logging

from cli import FlagError

from tokenization.basic import BasicTokenizer
from tokenization.vocab import SPECIAL_TOKENS, VocabError, check_special_tokens, load_vocab
from tokenization.wordpiece import WordpieceTokenizer


class FullTokenizer:
  """End-to-end WordPiece tokenizer with the API of Google's `tokenization.FullTokenizer`.

  Unlike Google's, the vocabulary must hold `special_tokens` (VocabError otherwise).
  """

  def __init__(self, vocab_file, do_lower_case=True, special_tokens=SPECIAL_TOKENS, vocab=None):
    """`vocab`: the {token: id} already loaded from `vocab_file` (it is then not read)."""
    self.vocab_file = vocab_file
    self.do_lower_case = do_lower_case
    self.vocab = load_vocab(vocab_file) if vocab is None else vocab
    check_special_tokens(self.vocab, vocab_file, special_tokens)
    self.inv_vocab = {i: t for t, i in self.vocab.items()}
    self.basic_tokenizer = BasicTokenizer(do_lower_case=do_lower_case)
    self.wordpiece_tokenizer = WordpieceTokenizer(vocab=self.vocab)

  def check_vocab_size(self, vocab_size, model_source):
    """Raises VocabError unless the vocabulary has the model's `vocab_size` tokens."""
    if len(self.vocab) != vocab_size:
      raise VocabError(f"vocab_file {self.vocab_file} has {len(self.vocab)} tokens but the "
                       f"model config ({model_source}) has vocab_size {vocab_size}: use the "
                       "vocabulary the checkpoint was trained with")

  def tokenize(self, text):
    return self.wordpiece_tokenizer.tokenize(" ".join(self.basic_tokenizer.tokenize(text)))

  def convert_tokens_to_ids(self, tokens):
    try:
      return [self.vocab[t] for t in tokens]
    except KeyError as e:
      raise KeyError(f"token {e.args[0]!r} is not in the vocabulary {self.vocab_file!r}") from None

  def convert_ids_to_tokens(self, ids):
    try:
      return [self.inv_vocab[i] for i in ids]
    except KeyError as e:
      raise KeyError(f"id {e.args[0]!r} is out of range for the vocabulary {self.vocab_file!r} "
                     f"({len(self.vocab)} tokens)") from None


# Google's published checkpoints whose directory name tells their casing.
_UNCASED_MODELS = ("uncased_L-24_H-1024_A-16", "uncased_L-12_H-768_A-12",
                   "multilingual_L-12_H-768_A-12", "chinese_L-12_H-768_A-12")
_CASED_MODELS = ("cased_L-12_H-768_A-12", "cased_L-24_H-1024_A-16",
                 "multi_cased_L-12_H-768_A-12")


def validate_case_matches_checkpoint(do_lower_case, init_checkpoint):
  """Raises ValueError when a published checkpoint's casing contradicts `do_lower_case`.

  Only checkpoints whose path ends in `<published model name>/bert_model.ckpt`
  are checked; any other path is accepted, as in Google's release.
  """
  if not init_checkpoint:
    return
  m = re.match(r"^.*?([A-Za-z0-9_-]+)/bert_model.ckpt", os.fspath(init_checkpoint))
  if m is None:
    return
  name = m.group(1)
  if name in _UNCASED_MODELS and not do_lower_case:
    wrong, needed, kind = False, True, "lower-cased (uncased)"
  elif name in _CASED_MODELS and do_lower_case:
    wrong, needed, kind = True, False, "cased"
  else:
    return
  raise FlagError(
      f"do_lower_case={wrong} does not match the checkpoint {init_checkpoint!r}: "
      f"{name} is a {kind} model, so its vocabulary expects do_lower_case={needed}. "
      f"Pass --do_lower_case={needed}.")


def resolve_do_lower_case(do_lower_case, vocab_file):
  """--do_lower_case, or when unset what the vocab file's path says ("uncased" / "cased")."""
  if do_lower_case is not None:
    return do_lower_case
  path = os.fspath(vocab_file).lower()
  if "uncased" in path or "cased" in path:
    guess = "uncased" in path
    logging.info("--do_lower_case=%s, from the vocab file's path %s", guess, vocab_file)
    return guess
  raise FlagError(f"--do_lower_case is not set and the path of --vocab_file {vocab_file!r} "
                  "says neither 'uncased' nor 'cased': pass --do_lower_case=true or false")
