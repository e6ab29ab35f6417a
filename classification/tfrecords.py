"""Features -> TFRecord files with Google's feature names, and their parse spec.

Each record holds `input_ids`, `input_mask`, `segment_ids` (int64 x seq_length),
`label_ids` (one int64; one float for regression) and `is_real_example` (one
int64), as written by Google's `file_based_convert_examples_to_features`.
"""

import tensorflow as tf
from absl import logging

from classification.features import convert_single_example
from fileio import atomic_output, frame_record


def _int64s(values):
  return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))


def _floats(values):
  return tf.train.Feature(float_list=tf.train.FloatList(value=list(values)))


def features_to_tf_example(feature):
  """One InputFeatures as a tf.train.Example."""
  label = _floats if isinstance(feature.label_id, float) else _int64s
  return tf.train.Example(features=tf.train.Features(feature={
      "input_ids": _int64s(feature.input_ids),
      "input_mask": _int64s(feature.input_mask),
      "segment_ids": _int64s(feature.segment_ids),
      "label_ids": label([feature.label_id]),
      "is_real_example": _int64s([int(feature.is_real_example)]),
  }))


def file_based_convert_examples_to_features(examples, label_list, max_seq_length, tokenizer,
                                            output_file):
  """Converts examples and writes them to `output_file` atomically (`fileio.atomic_output`).

  `label_list=None` marks a regression task (float `label_ids`).
  """
  with atomic_output(output_file, "wb") as writer:
    for i, example in enumerate(examples):
      if i % 10000 == 0:
        logging.info("Writing example %d of %d", i, len(examples))
      feature = convert_single_example(i, example, label_list, max_seq_length, tokenizer)
      writer.write(frame_record(features_to_tf_example(feature).SerializeToString()))


def feature_spec(seq_length, is_regression=False):
  """The records' `tf.io.parse_example` spec: Google's fixed-length features."""
  return {
      "input_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
      "input_mask": tf.io.FixedLenFeature([seq_length], tf.int64),
      "segment_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
      "label_ids": tf.io.FixedLenFeature([], tf.float32 if is_regression else tf.int64),
      "is_real_example": tf.io.FixedLenFeature([], tf.int64),
  }
