"""SQuAD features <-> TFRecord files with the feature names of Google's run_squad.py.

Every record holds `unique_ids` (one int64) and `input_ids`, `input_mask`,
`segment_ids` (int64 x max_seq_length); training records add
`start_positions`, `end_positions` and `is_impossible` (one int64 each), as
Google's `FeatureWriter` writes them. TensorFlow is imported on first use, so
that importing `squad` for reading and converting stays fast.
"""

from fileio import atomic_output, example_record


def _tf():
  import tensorflow as tf  # pylint: disable=import-outside-toplevel  (see the docstring)
  return tf


def feature_spec(max_seq_length, is_training):
  """The `tf.io.parse_single_example` spec of the records: fixed-length int64 features."""
  tf = _tf()
  spec = {"unique_ids": tf.io.FixedLenFeature([], tf.int64)}
  for name in ("input_ids", "input_mask", "segment_ids"):
    spec[name] = tf.io.FixedLenFeature([max_seq_length], tf.int64)
  if is_training:
    for name in ("start_positions", "end_positions", "is_impossible"):
      spec[name] = tf.io.FixedLenFeature([], tf.int64)
  return spec


def write_features(features, path, is_training):
  """Writes InputFeatures (any iterable) to the TFRecord file `path` atomically; returns the count.

  Readers of `path` see the old file or the complete new one (`fileio.atomic_output`).
  """
  count = 0
  with atomic_output(path, "wb") as writer:
    for feature in features:
      values = {"unique_ids": [feature.unique_id], "input_ids": feature.input_ids,
                "input_mask": feature.input_mask, "segment_ids": feature.segment_ids}
      if is_training:
        values.update(start_positions=[feature.start_position],
                      end_positions=[feature.end_position],
                      is_impossible=[int(feature.is_impossible)])
      writer.write(example_record(values))
      count += 1
  return count
