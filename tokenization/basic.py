"""BasicTokenizer: cleaning, CJK isolation, lower-casing, accent stripping, punctuation split."""

import unicodedata

from tokenization.chars import ACCENT_TABLE, CLEAN_TABLE, PUNCT_TABLE


def convert_to_unicode(text):
  """Returns `text` as str; bytes are decoded as UTF-8, dropping invalid bytes (Google's rule)."""
  if isinstance(text, str):
    return text
  if isinstance(text, bytes):
    return text.decode("utf-8", "ignore")
  raise TypeError(f"expected str or bytes, got {type(text).__name__}")


class BasicTokenizer:
  """Splits raw text into words and punctuation exactly as Google's BasicTokenizer.

  Google's version walks every character in Python; this one applies the same
  per-character rules through cached `str.translate` tables. The order of the
  steps is kept because it is observable: lower-casing runs before the
  punctuation split (Greek final sigma depends on the neighbouring characters),
  and punctuation is judged after accent stripping (U+1FEF decomposes to "`").
  """

  def __init__(self, do_lower_case=True):
    self.do_lower_case = do_lower_case

  def tokenize(self, text):
    text = convert_to_unicode(text).translate(CLEAN_TABLE)
    if self.do_lower_case:
      text = text.lower()
      if not text.isascii():
        text = unicodedata.normalize("NFD", text).translate(ACCENT_TABLE)
    # str.split() splits on the same whitespace as Google's whitespace_tokenize,
    # including U+2028/U+2029, which cleaning keeps.
    return text.translate(PUNCT_TABLE).split()
