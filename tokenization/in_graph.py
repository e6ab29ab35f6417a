"""In-graph WordPiece tokenizer (tensorflow-text) giving the ids of `FullTokenizer`.

`InGraphTokenizer` runs inside `tf.function`, `tf.data` and SavedModels. It
rebuilds Google's BasicTokenizer steps from TensorFlow string ops and hands the
result to tf-text's `FastWordpieceTokenizer`, which splits on whitespace,
punctuation and CJK ideographs and then into WordPieces:

1. drop invalid UTF-8 bytes (Python's decode(errors="ignore")) and delete
   NUL, U+FFFD and control characters (Cc, and Cf but not tab, LF, CR),
   with character classes taken from Python's `unicodedata`;
2. uncased only: lower-case (ICU full case mapping, so "İ" -> "i̇" and the
   Greek final sigma as in Python's `str.lower`), NFD, delete Mn marks;
3. WordPiece with `max_bytes_per_word` = 4 * 200, so that every word of up to
   200 characters fits, then every word of more than 200 characters is
   replaced by one [UNK], as Google's 200-character limit does.

tf-text's own `FastBertNormalizer` is not used: it decomposes with the
compatibility mappings (NFKD: "½" -> "1⁄2", "…" -> "...") where Google uses
NFD, and it turns control characters into spaces where Google deletes them
("co<U+00AD>operate", with a soft hyphen, is one word for Google).

Measured differences from `FullTokenizer` (Python 3.11, whose `unicodedata` is
Unicode 14.0.0; TensorFlow 2.21.0, tensorflow-text 2.21.1). They come from the
different Unicode versions of the libraries; each is a code point that did
not exist before Unicode 14, so no natural text here contains one (the tests
check every code point):

* `NEWER_PUNCTUATION` (36 code points, both casings): unassigned in
  Unicode 14, punctuation to tf-text, so tf-text splits words at them while
  `FullTokenizer` keeps them inside the word.
* `NOT_LOWERCASED` (40 capitals added in Unicode 14, uncased only): Python
  lower-cases them, TensorFlow's ICU leaves them unchanged.
* `NEWER_DECOMPOSITIONS` (20 code points, uncased only): unassigned in
  Unicode 14, decomposed by ICU's NFD, kept whole by Python's.

On any text free of these code points the ids are identical: every line of
the corpora in ../shared/data/corpus, random Unicode strings, and every code
point between two letters were compared.
"""

import functools
import unicodedata

import tensorflow as tf
import tensorflow_text as tf_text

from tokenization.chars import is_control
from tokenization.vocab import load_wordpiece_vocab

# Google's WordpieceTokenizer limit, in characters.
MAX_CHARS_PER_WORD = 200
# UTF-8 needs at most 4 bytes per character.
_MAX_BYTES_PER_WORD = 4 * MAX_CHARS_PER_WORD


def _code_points(*ranges):
  return frozenset(cp for lo, hi in ranges for cp in range(lo, hi + 1))


# Code points where this tokenizer and `FullTokenizer` disagree (see above).
NEWER_PUNCTUATION = _code_points(
    (0x1B4E, 0x1B4F), (0x1B7F, 0x1B7F), (0x10D6E, 0x10D6E), (0x113D4, 0x113D5),
    (0x113D7, 0x113D8), (0x11B00, 0x11B09), (0x11BE1, 0x11BE1), (0x11F43, 0x11F4F),
    (0x16D6D, 0x16D6F), (0x1E5FF, 0x1E5FF))
NOT_LOWERCASED = _code_points(
    (0x2C2F, 0x2C2F), (0xA7C0, 0xA7C0), (0xA7D0, 0xA7D0), (0xA7D6, 0xA7D6),
    (0xA7D8, 0xA7D8), (0x10570, 0x1057A), (0x1057C, 0x1058A), (0x1058C, 0x10592),
    (0x10594, 0x10595))
NEWER_DECOMPOSITIONS = _code_points(
    (0x105C9, 0x105C9), (0x105E4, 0x105E4), (0x11383, 0x11383), (0x11385, 0x11385),
    (0x1138E, 0x1138E), (0x11391, 0x11391), (0x113C5, 0x113C5), (0x113C7, 0x113C8),
    (0x16121, 0x16128), (0x16D68, 0x16D6A))


def differing_code_points(do_lower_case):
  """The code points at which the in-graph ids may differ from `FullTokenizer`'s."""
  if do_lower_case:
    return NEWER_PUNCTUATION | NOT_LOWERCASED | NEWER_DECOMPOSITIONS
  return NEWER_PUNCTUATION


def _char_class(predicate):
  """An RE2 character class of the code points where `predicate(char)` holds.

  Built from Python's `unicodedata`, so that deleting and stripping in-graph
  use the same Unicode version as `FullTokenizer`, not RE2's newer tables.
  """
  ranges = []
  for cp in range(0x110000):
    if 0xD800 <= cp <= 0xDFFF or not predicate(chr(cp)):
      continue
    if ranges and ranges[-1][1] == cp - 1:
      ranges[-1][1] = cp
    else:
      ranges.append([cp, cp])
  return "[" + "".join(f"\\x{{{lo:X}}}" if lo == hi else f"\\x{{{lo:X}}}-\\x{{{hi:X}}}"
                       for lo, hi in ranges) + "]"


@functools.lru_cache(maxsize=None)
def _deleted_chars():
  """Characters Google's BasicTokenizer deletes: NUL, U+FFFD, Cc and Cf but tab, LF, CR."""
  return _char_class(lambda ch: ch == "\ufffd" or is_control(ch))


@functools.lru_cache(maxsize=None)
def _nonspacing_marks():
  """Characters accent stripping deletes after NFD: category Mn."""
  return _char_class(lambda ch: unicodedata.category(ch) == "Mn")


def drop_invalid_utf8(texts):
  """`texts` without their invalid UTF-8 bytes, as Google's convert_to_unicode (errors="ignore").

  Transcoding would cost about a third of the tokenizer's time, so it only
  runs on batches that need it.
  """
  return tf.cond(
      tf.reduce_all(is_valid_utf8(texts)), lambda: texts,
      lambda: tf.strings.unicode_transcode(texts, "UTF-8", "UTF-8", errors="ignore"))


def is_valid_utf8(texts):
  """True where a string is valid UTF-8 (no stray bytes, surrogates or code points > U+10FFFF)."""
  # RE2 decodes leniently; a class without the surrogates rejects all three.
  return tf.strings.regex_full_match(texts, r"[\x{0}-\x{D7FF}\x{E000}-\x{10FFFF}]*")


class InGraphTokenizer(tf.Module):
  """`FullTokenizer(vocab_file, do_lower_case)` as TensorFlow ops.

  `tokenize(texts)` maps a string tensor of shape [batch] to an int32
  RaggedTensor [batch, (tokens)] of WordPiece ids; `pack` turns one or two of
  those into BERT's model inputs.
  """

  def __init__(self, vocab_file, do_lower_case=True, name=None):
    super().__init__(name=name)
    ids = load_wordpiece_vocab(vocab_file)
    vocab = list(ids)
    self.do_lower_case = do_lower_case
    self.vocab_size = len(vocab)
    self.mask_id = ids.get("[MASK]")  # None: the vocab has no [MASK]
    self.cls_id = ids["[CLS]"]
    self.sep_id = ids["[SEP]"]
    self.unk_id = ids["[UNK]"]
    self._wordpiece = tf_text.FastWordpieceTokenizer(
        vocab=vocab, suffix_indicator="##", max_bytes_per_word=_MAX_BYTES_PER_WORD,
        token_out_type=tf.int32, unknown_token="[UNK]")
    # True for ids that continue a word; every other id starts one.
    self._is_suffix = tf.constant([t.startswith("##") for t in vocab])

  def normalize(self, texts):
    """Google's cleaning and (uncased) lower-casing and accent stripping of [batch] strings."""
    return self._fold(drop_invalid_utf8(tf.convert_to_tensor(texts, tf.string)))

  def _fold(self, texts):
    """`normalize` of valid UTF-8 strings (of any shape)."""
    texts = tf.strings.regex_replace(texts, _deleted_chars(), "")
    if self.do_lower_case:
      texts = tf.strings.lower(texts, encoding="utf-8")
      texts = tf_text.normalize_utf8(texts, "NFD")
      texts = tf.strings.regex_replace(texts, _nonspacing_marks(), "")
    return texts

  def tokenize(self, texts):
    """Returns the WordPiece ids of `texts` ([batch] strings) as int32 [batch, (tokens)]."""
    texts = self.normalize(texts)
    ids, starts, ends = self._wordpiece.tokenize_with_offsets(texts)
    return self._unk_long_words(texts, ids, starts, ends)[0]

  def tokenize_words(self, texts):
    """The ids of `tokenize` grouped by word: int32 [batch, (words), (pieces)].

    A word is what Google's BasicTokenizer splits (whitespace, punctuation,
    CJK ideographs): its pieces are one piece that is not a "##" continuation
    and the continuations after it. This is the shape TF Hub's `tokenize` gives.
    """
    ids = self.tokenize(texts)  # [batch, (pieces)]
    starts = tf.logical_or(tf.logical_not(tf.gather(self._is_suffix, ids.flat_values)),
                           tf.ragged.range(ids.row_lengths()).flat_values == 0)
    words = tf.RaggedTensor.from_value_rowids(  # [all words, (pieces)]
        ids.flat_values, tf.cumsum(tf.cast(starts, tf.int64)) - 1,
        nrows=tf.reduce_sum(tf.cast(starts, tf.int64)))
    words_per_row = tf.reduce_sum(tf.cast(ids.with_flat_values(starts), tf.int64), axis=1)
    return tf.RaggedTensor.from_row_lengths(words, words_per_row)

  def tokenize_with_offsets(self, texts):
    """The ids of `tokenize` and the characters of `texts` each piece comes from.

    Returns (ids, starts, ends), each [batch, (tokens)]: int32 ids and int64
    code-point offsets, end exclusive, into `texts` after `drop_invalid_utf8`.
    A piece runs from the character holding its first normalized byte through
    the character holding its last, and on over the characters right after
    it that normalization deletes (control and format characters; uncased,
    also accents written as combining marks); an [UNK] covers its whole word.
    """
    texts = drop_invalid_utf8(tf.convert_to_tensor(texts, tf.string))
    normalized = self._fold(texts)
    ids, starts, ends = self._unk_long_words(
        normalized, *self._wordpiece.tokenize_with_offsets(normalized))
    # Normalization maps each character on its own, up to the length-preserving exceptions
    # (Greek final sigma; NFD's reordering of combining marks), so the normalized text is the
    # characters' normalized forms in order.
    chars = tf.strings.unicode_split(texts, "UTF-8")  # [batch, (chars)]
    # [all chars]: the normalized byte where each character ends, counted over the batch.
    char_ends = tf.cumsum(tf.cast(tf.strings.length(self._fold(chars.flat_values)), tf.int64))
    row_bytes = tf.gather(tf.concat([[0], char_ends], 0), chars.row_starts())  # [batch]
    row_chars = tf.gather(chars.row_starts(), starts.value_rowids())  # [all tokens]
    row_lengths = tf.gather(chars.row_lengths(), starts.value_rowids())

    def to_chars(byte_offsets):
      """Normalized byte offsets -> the number of characters whose normalized form ends there
      or before (a trailing deleted character of the next row belongs to it, so clip)."""
      flat = byte_offsets.flat_values + tf.gather(row_bytes, byte_offsets.value_rowids())
      local = tf.searchsorted(char_ends, flat, side="right", out_type=tf.int64) - row_chars
      return byte_offsets.with_flat_values(tf.minimum(local, row_lengths))

    return ids, to_chars(starts), to_chars(ends)

  def _unk_long_words(self, texts, ids, starts, ends):
    """Replaces every word of more than 200 characters by a single [UNK]: (ids, starts, ends)."""
    flat_ids = ids.flat_values
    word_start = tf.logical_not(tf.gather(self._is_suffix, flat_ids))
    word = tf.cumsum(tf.cast(word_start, tf.int32)) - 1  # [pieces] -> word index
    # The pieces of a word tile it, so its bytes are the sum of theirs. Only
    # words of more than 200 bytes can have more than 200 characters; natural
    # text has none, so the character count is skipped for most batches.
    word_bytes = tf.math.segment_sum(ends.flat_values - starts.flat_values, word)
    maybe_long = word_bytes > MAX_CHARS_PER_WORD  # [words]

    def unk_long_words():
      candidates = tf.where(maybe_long)[:, 0]
      row = tf.gather(tf.boolean_mask(ids.value_rowids(), word_start), candidates)
      begin = tf.gather(tf.boolean_mask(starts.flat_values, word_start), candidates)
      chars = tf.strings.length(
          tf.strings.substr(tf.gather(texts, row), begin, tf.gather(word_bytes, candidates)),
          unit="UTF8_CHAR")
      long_word = tf.scatter_nd(candidates[:, None], chars > MAX_CHARS_PER_WORD,
                                tf.shape(word_bytes, out_type=tf.int64))
      in_long_word = tf.gather(long_word, word)  # [pieces]
      keep = ids.with_flat_values(tf.logical_or(word_start, tf.logical_not(in_long_word)))
      new_ids = tf.where(in_long_word, self.unk_id, flat_ids)
      # A long word's [UNK] ends where its last piece did.
      word_end = tf.gather(tf.math.segment_max(ends.flat_values, word), word)
      new_ends = tf.where(in_long_word, word_end, ends.flat_values)
      return (tf.ragged.boolean_mask(ids.with_flat_values(new_ids), keep),
              tf.ragged.boolean_mask(starts, keep),
              tf.ragged.boolean_mask(ends.with_flat_values(new_ends), keep))

    return tf.cond(tf.reduce_any(maybe_long), unk_long_words, lambda: (ids, starts, ends))

  def pack(self, ids_a, ids_b=None, max_seq_length=128):
    """BERT model inputs from token ids, as Google's `run_classifier.convert_single_example`.

    Rows are `[CLS] A [SEP]`, or `[CLS] A [SEP] B [SEP]` where B is non-empty
    (an empty B row is packed as a single segment, as Google does for an
    empty `tokens_b`). A is cut to max_seq_length - 2 tokens; a pair is cut by
    `_truncate_seq_pair` to max_seq_length - 3. Segment ids are 0 on
    `[CLS] A [SEP]` and padding, 1 on `B [SEP]`; padding is 0.

    Args:
      ids_a: int RaggedTensor [batch, (tokens)], e.g. from `tokenize`.
      ids_b: optional int RaggedTensor [batch, (tokens)], the second segments.
      max_seq_length: Python int, the length to truncate and 0-pad to.

    Returns:
      {"input_ids", "input_mask", "segment_ids"}: int32 [batch, max_seq_length].
    """
    return pack(ids_a, ids_b, max_seq_length, self.cls_id, self.sep_id)


def truncated_lengths(len_a, len_b, budget):
  """Segment lengths left by Google's `_truncate_seq_pair(a, b, budget)`, in closed form.

  Google pops the last token of the longer segment (of B on ties) while the
  two exceed `budget`. That keeps a short segment whole and cuts the long one
  to the rest or, when both are long, leaves ceil(budget/2) to A and
  floor(budget/2) to B.
  """
  new_a = tf.minimum(len_a, tf.maximum(budget - len_b, (budget + 1) // 2))
  new_b = tf.minimum(len_b, tf.maximum(budget - len_a, budget // 2))
  return new_a, new_b


def pack(ids_a, ids_b, max_seq_length, cls_id, sep_id):
  """See `InGraphTokenizer.pack`; `cls_id` and `sep_id` are the vocab's [CLS] and [SEP] ids.

  max_seq_length may also be a scalar int tensor (TF Hub's `bert_pack_inputs`
  takes it at call time); the outputs are then [batch, max_seq_length] with
  the length known only when the graph runs.
  """
  min_length = 2 if ids_b is None else 3
  if isinstance(max_seq_length, int) and max_seq_length < min_length:
    raise ValueError(f"max_seq_length must be at least {min_length} to hold [CLS] and [SEP], "
                     f"got {max_seq_length}")
  ids_a = tf.cast(ids_a, tf.int32)
  batch = ids_a.nrows()  # int64, as every index below
  static_width = max_seq_length if isinstance(max_seq_length, int) else None
  width = tf.cast(max_seq_length, batch.dtype)
  if ids_b is None:
    ids_b = tf.RaggedTensor.from_row_lengths(tf.zeros([0], tf.int32),
                                             tf.zeros([batch], ids_a.row_splits.dtype))
  ids_b = tf.cast(ids_b, tf.int32)
  has_b = ids_b.row_lengths() > 0  # [batch]
  len_a, len_b = truncated_lengths(ids_a.row_lengths(), ids_b.row_lengths(),
                                   width - 2 - tf.cast(has_b, batch.dtype))
  # Every token of a row gets its (row, column) and is scattered into zeros [batch, width]:
  # [CLS] at column 0, A's first len_a ids from column 1, [SEP], then where B is non-empty
  # its first len_b ids and [SEP]. Flat index arithmetic: ragged broadcasting and ragged
  # concatenation cost seconds to trace and more to run.
  rows = tf.range(batch)
  rows_b = tf.boolean_mask(rows, has_b)  # the rows with a B segment
  kept_a, at_a = _first_pieces(ids_a, len_a, tf.ones_like(len_a))
  kept_b, at_b = _first_pieces(ids_b, len_b, len_a + 2)
  at = tf.concat([tf.stack([rows, tf.zeros_like(rows)], 1), at_a,
                  tf.stack([rows, len_a + 1], 1), at_b,
                  tf.stack([rows_b, tf.gather(len_a + len_b + 2, rows_b)], 1)], 0)  # [n, 2]
  cls = tf.fill([batch], tf.constant(cls_id, tf.int32))
  sep = tf.fill([batch], tf.constant(sep_id, tf.int32))
  ids = tf.concat([cls, kept_a, sep, kept_b, tf.gather(sep, rows_b)], 0)  # [n]
  segment_b = tf.size(kept_b) + tf.size(rows_b)  # the last ids, B [SEP]
  segments = tf.concat([tf.zeros([tf.size(ids) - segment_b], tf.int32),
                        tf.ones([segment_b], tf.int32)], 0)
  shape = tf.stack([batch, width])
  return {name: tf.ensure_shape(tf.scatter_nd(at, values, shape), [None, static_width])
          for name, values in (("input_ids", ids), ("input_mask", tf.ones_like(ids)),
                               ("segment_ids", segments))}


def _first_pieces(ids, lengths, first_column):
  """The first lengths[i] ids of row i of the RaggedTensor `ids` [n], and where they go
  in the packed rows, int64 [n, 2]: (i, first_column[i] + j) for the j-th."""
  starts = ids.row_starts()
  taken = tf.ragged.range(starts, starts + lengths)  # [batch, (lengths)]: indices into values
  rows = taken.value_rowids()
  columns = taken.values - tf.gather(starts - first_column, rows)
  return tf.gather(ids.values, taken.values), tf.stack([rows, columns], 1)
