"""Character classes of Google's BERT BasicTokenizer, one predicate per rule."""

import unicodedata

# CJK Unified Ideographs, Extensions A-E and the two Compatibility Ideographs
# blocks: exactly the ranges Google's tokenizer splits into single characters.
# Kana, Hangul and other scripts are deliberately not in here.
CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)


def is_whitespace(ch):
  """Space, tab, newline, carriage return and Unicode category Zs."""
  return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def is_control(ch):
  """Categories Cc and Cf, except tab/newline/CR (those count as whitespace)."""
  if ch in "\t\n\r":
    return False
  return unicodedata.category(ch) in ("Cc", "Cf")


def is_punctuation(ch):
  """Unicode P* categories plus every ASCII non-alphanumeric symbol ($, ^, `, ...)."""
  cp = ord(ch)
  if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
    return True
  return unicodedata.category(ch).startswith("P")


def is_cjk(ch):
  cp = ord(ch)
  return any(lo <= cp <= hi for lo, hi in CJK_RANGES)


class _LazyTable(dict):
  """A `str.translate` table filled on first sight of each code point.

  `str.translate` looks characters up by ordinal, so a dict whose __missing__
  classifies and caches lets the whole per-character pass run in C once the
  text's distinct characters have been seen.
  """

  def __init__(self, classify):
    super().__init__()
    self._classify = classify

  def __missing__(self, cp):
    value = self._classify(chr(cp))
    self[cp] = value
    return value


def _clean_and_split_cjk(ch):
  """Step 1: drop NUL/U+FFFD/control, map whitespace to ' ', isolate CJK."""
  cp = ord(ch)
  if cp == 0 or cp == 0xFFFD or is_control(ch):
    return ""
  if is_whitespace(ch):
    return " "
  if is_cjk(ch):
    return f" {ch} "
  return ch


def _split_punctuation(ch):
  """Step 3: every punctuation character becomes a token of its own."""
  return f" {ch} " if is_punctuation(ch) else ch


def _drop_nonspacing_marks(ch):
  """Accent stripping after NFD: drop category Mn."""
  return "" if unicodedata.category(ch) == "Mn" else ch


CLEAN_TABLE = _LazyTable(_clean_and_split_cjk)
PUNCT_TABLE = _LazyTable(_split_punctuation)
ACCENT_TABLE = _LazyTable(_drop_nonspacing_marks)
