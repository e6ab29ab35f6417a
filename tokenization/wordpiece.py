"""WordpieceTokenizer: greedy longest-match-first split of words into vocabulary pieces."""

from tokenization.basic import convert_to_unicode


class WordpieceTokenizer:
  """Splits whitespace-separated words into WordPieces, as Google's release does.

  A word longer than `max_input_chars_per_word` characters, or one that cannot
  be covered by vocabulary pieces, becomes a single `unk_token`. Results are
  memoised per word: natural text repeats its words, so most lookups are one
  dict hit.
  """

  _CACHE_LIMIT = 500_000

  def __init__(self, vocab, unk_token="[UNK]", max_input_chars_per_word=200):
    self.vocab = vocab
    self.unk_token = unk_token
    self.max_input_chars_per_word = max_input_chars_per_word
    # No piece is longer than this many characters (without its "##"), so the
    # search for a match never needs to try longer substrings.
    self._max_piece_chars = max(
        (len(t) - 2 if t.startswith("##") else len(t)) for t in vocab) if vocab else 0
    self._cache = {}

  def tokenize(self, text):
    output = []
    for word in convert_to_unicode(text).split():
      pieces = self._cache.get(word)
      if pieces is None:
        pieces = self.split_word(word)
        if len(self._cache) >= self._CACHE_LIMIT:
          self._cache.clear()
        self._cache[word] = pieces
      output.extend(pieces)
    return output

  def split_word(self, word):
    """The pieces of one word (no whitespace in it), uncached."""
    n = len(word)
    if n > self.max_input_chars_per_word:
      return (self.unk_token,)
    vocab = self.vocab
    pieces = []
    start = 0
    while start < n:
      end = min(n, start + self._max_piece_chars)
      while end > start:
        piece = word[start:end] if start == 0 else "##" + word[start:end]
        if piece in vocab:
          pieces.append(piece)
          break
        end -= 1
      else:
        return (self.unk_token,)
      start = end
    return tuple(pieces)
