"""The features of a pre-training record, exactly as Google's release writes and reads them.

`run_pretraining` parses records with `feature_spec`, so files written by
Google's script and by ours are interchangeable. Records written with
`--dynamic_masking` have the same features minus MASK_FEATURES, and unmasked
`input_ids`: run_pretraining masks them anew at each epoch.
"""

# (name, kind, length key): kind is "int64" or "float"; the length is
# max_seq_length ("seq"), max_predictions_per_seq ("pred") or 1.
# The order is Google's insertion order, which our writer also uses on the wire.
FEATURES = (
    ("input_ids", "int64", "seq"),
    ("input_mask", "int64", "seq"),
    ("segment_ids", "int64", "seq"),
    ("masked_lm_positions", "int64", "pred"),
    ("masked_lm_ids", "int64", "pred"),
    ("masked_lm_weights", "float", "pred"),
    ("next_sentence_labels", "int64", 1),
)

# The masked-LM choice, absent from dynamic-masking records.
MASK_FEATURES = ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights")


def features(dynamic=False):
  """FEATURES, or those of dynamic-masking records."""
  return tuple(f for f in FEATURES if not (dynamic and f[0] in MASK_FEATURES))


def feature_lengths(max_seq_length, max_predictions_per_seq, dynamic=False):
  """{feature name: fixed length} for the given sizes."""
  sizes = {"seq": max_seq_length, "pred": max_predictions_per_seq, 1: 1}
  return {name: sizes[length] for name, _, length in features(dynamic)}


def feature_spec(max_seq_length, max_predictions_per_seq, dynamic=False):
  """Google's `tf.io.parse_single_example` spec: fixed-length int64/float32 features."""
  import tensorflow as tf  # pylint: disable=import-outside-toplevel  (workers never need TF)
  dtypes = {"int64": tf.int64, "float": tf.float32}
  lengths = feature_lengths(max_seq_length, max_predictions_per_seq, dynamic)
  return {name: tf.io.FixedLenFeature([lengths[name]], dtypes[kind])
          for name, kind, _ in features(dynamic)}
