"""Features -> TFRecord files with Google's feature names, and their parse spec.

Each record holds `input_ids`, `input_mask`, `segment_ids` (int64 x seq_length),
`label_ids` (one int64; one float for regression) and `is_real_example` (one
int64), as written by Google's `file_based_convert_examples_to_features`.
"""

import tensorflow as tf
from absl import logging

from classification.features import convert_single_example
from fileio import atomic_output, example_record


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
      writer.write(example_record({
          "input_ids": feature.input_ids, "input_mask": feature.input_mask,
          "segment_ids": feature.segment_ids, "label_ids": [feature.label_id],
          "is_real_example": [int(feature.is_real_example)]}))


def feature_spec(seq_length, is_regression=False):
  """The records' `tf.io.parse_example` spec: Google's fixed-length features."""
  return {
      "input_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
      "input_mask": tf.io.FixedLenFeature([seq_length], tf.int64),
      "segment_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
      "label_ids": tf.io.FixedLenFeature([], tf.float32 if is_regression else tf.int64),
      "is_real_example": tf.io.FixedLenFeature([], tf.int64),
  }
