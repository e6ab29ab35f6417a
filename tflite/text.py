"""Raw text to BERT's inputs with ops a TFLite interpreter runs: TF Text's custom ops and
TFLite builtins.

`LiteTokenizer` normalizes with tf-text's `FastBertNormalizer` and splits with
`FastWordpieceTokenizer` (the custom ops `FastBertNormalize` and
`FastWordpieceTokenize` of `tensorflow_text.tflite_registrar`), then packs with
dense builtin ops (range, compare, select, gather): TensorFlow's string ops (regex,
lower-casing, NFD) and ragged ops have no TFLite kernels. Pairs are cut
with Google's `_truncate_seq_pair` (`tokenization.in_graph.truncated_lengths`).

Where its ids differ from `FullTokenizer`'s (FastBertNormalizer is not Google's
BasicTokenizer; see the README's "TFLite and int8"):
* uncased: NFKD where Google uses NFD ("½" -> "1⁄2", "ﬁ" -> "fi");
* control and format characters become spaces where Google deletes them, so
  a soft hyphen inside a word splits it;
* a word of more than 200 characters is not one [UNK] (Google's limit) unless
  it has more than `MAX_BYTES_PER_WORD` bytes.
"""

import tensorflow as tf
import tensorflow_text as tf_text

from tokenization.in_graph import truncated_lengths
from tokenization.vocab import load_wordpiece_vocab

# Every word of up to 200 characters (Google's limit) fits: UTF-8 needs at most 4 bytes each.
MAX_BYTES_PER_WORD = 4 * 200


class LiteTokenizer(tf.Module):
  """`FullTokenizer(vocab_file, do_lower_case)`'s ids from TFLite-compatible ops (see above)."""

  def __init__(self, vocab_file, do_lower_case=True, name=None):
    super().__init__(name=name)
    ids = load_wordpiece_vocab(vocab_file)
    vocab = list(ids)
    self.cls_id, self.sep_id = ids["[CLS]"], ids["[SEP]"]
    self._normalizer = tf_text.FastBertNormalizer(lower_case_nfd_strip_accents=do_lower_case)
    self._wordpiece = tf_text.FastWordpieceTokenizer(
        vocab=vocab, suffix_indicator="##", max_bytes_per_word=MAX_BYTES_PER_WORD,
        token_out_type=tf.int32, unknown_token="[UNK]")

  def tokenize(self, texts):
    """Returns the WordPiece ids of `texts` ([batch] strings) as int32 [batch, (tokens)]."""
    ids = self._wordpiece.tokenize(self._normalizer.normalize(texts))
    # No validation: its assertions have no TFLite kernel.
    return tf.RaggedTensor.from_row_splits(ids.flat_values, tf.cast(ids.row_splits, tf.int32),
                                           validate=False)

  def pack(self, ids_a, ids_b=None, max_seq_length=128):
    """BERT's inputs from `tokenize`'s ids, exactly as `InGraphTokenizer.pack` (see there):
    {"input_ids", "input_mask", "segment_ids"}, int32 [batch, max_seq_length]."""
    if ids_b is None:
      ids_b = tf.RaggedTensor.from_row_splits(tf.zeros([0], tf.int32),
                                              tf.zeros_like(ids_a.row_splits), validate=False)
    len_a, len_b = ids_a.row_lengths(), ids_b.row_lengths()  # [batch]
    has_b = tf.cast(len_b > 0, tf.int32)
    len_a, len_b = truncated_lengths(len_a, len_b, max_seq_length - 2 - has_b)
    total = (len_a + 2 + has_b * (len_b + 1))[:, None]  # [batch, 1] against columns [1, width]
    col = tf.range(max_seq_length)[None, :]
    len_a, len_b, has_b = len_a[:, None], len_b[:, None], has_b[:, None] > 0
    b_start = len_a + 2
    is_sep = tf.logical_or(col == len_a + 1, tf.logical_and(has_b, col == b_start + len_b))
    ids = tf.where(col == 0, self.cls_id, tf.where(is_sep, self.sep_id, 0))
    ids = tf.where(tf.logical_and(col >= 1, col <= len_a), _gather_rows(ids_a, col - 1), ids)
    ids = tf.where(tf.logical_and(col >= b_start, col < b_start + len_b),
                   _gather_rows(ids_b, col - b_start), ids)
    mask = col < total
    return {"input_ids": ids, "input_mask": tf.cast(mask, tf.int32),
            "segment_ids": tf.cast(tf.logical_and(col >= b_start, mask), tf.int32)}


def _gather_rows(ids, positions):
  """ids[i][positions[i, j]] as [batch, width], positions clipped into range (the callers
  keep only the positions inside each row)."""
  # One zero after the values: an all-empty batch still has an element to gather.
  values = tf.concat([ids.flat_values, [0]], 0)
  index = tf.clip_by_value(ids.row_starts()[:, None] + positions, 0, tf.size(values) - 1)
  return tf.gather(values, index)


def tokenizer_model(vocab_file, do_lower_case=True):
  """A .tflite (bytes) of `LiteTokenizer.tokenize` alone, to check its ids on their own.

  Its one signature, serving_default, maps `texts` (string [batch]) to `ids` (int32 [n],
  every row's ids in turn) and `row_splits` (int32 [batch + 1]).
  """
  tokenizer = LiteTokenizer(vocab_file, do_lower_case)

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="texts")])
  def tokenize(texts):
    ids = tokenizer.tokenize(texts)
    return {"ids": ids.flat_values, "row_splits": ids.row_splits}

  converter = tf.lite.TFLiteConverter.from_concrete_functions(
      [tokenize.get_concrete_function()], tokenizer)
  converter.allow_custom_ops = True
  return converter.convert()
