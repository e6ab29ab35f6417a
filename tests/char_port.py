"""A plain character-by-character port of Google's tokenization rules.

It is deliberately the slow, obvious transcription of the rules (one Python
loop per character, no caches): the oracle our fast tokenizer is compared with
in tests, and the baseline `bench/tokenization.py` measures speed against.
"""

import unicodedata

from tokenization.chars import is_cjk, is_control, is_punctuation, is_whitespace


def basic_tokenize(text, do_lower_case):
  cleaned = []
  for ch in text:
    if ord(ch) == 0 or ord(ch) == 0xFFFD or is_control(ch):
      continue
    if is_whitespace(ch):
      cleaned.append(" ")
    elif is_cjk(ch):
      cleaned.extend((" ", ch, " "))
    else:
      cleaned.append(ch)
  words = []
  for token in "".join(cleaned).split():
    if do_lower_case:
      token = token.lower()
      token = "".join(c for c in unicodedata.normalize("NFD", token)
                      if unicodedata.category(c) != "Mn")
    current = []
    for ch in token:
      if is_punctuation(ch):
        if current:
          words.append("".join(current))
          current = []
        words.append(ch)
      else:
        current.append(ch)
    if current:
      words.append("".join(current))
  return words


def wordpiece_tokenize(word, vocab, max_chars=200, unk="[UNK]"):
  chars = list(word)
  if len(chars) > max_chars:
    return [unk]
  pieces = []
  start = 0
  while start < len(chars):
    end = len(chars)
    found = None
    while start < end:
      candidate = "".join(chars[start:end])
      if start > 0:
        candidate = "##" + candidate
      if candidate in vocab:
        found = candidate
        break
      end -= 1
    if found is None:
      return [unk]
    pieces.append(found)
    start = end
  return pieces


def full_tokenize(text, vocab, do_lower_case):
  return [p for w in basic_tokenize(text, do_lower_case) for p in wordpiece_tokenize(w, vocab)]
