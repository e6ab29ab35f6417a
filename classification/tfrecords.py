"""Features <-> TFRecord files with Google's feature names, and the tf.data input function.

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


def _feature_spec(seq_length, is_regression):
  return {
      "input_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
      "input_mask": tf.io.FixedLenFeature([seq_length], tf.int64),
      "segment_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
      "label_ids": tf.io.FixedLenFeature([], tf.float32 if is_regression else tf.int64),
      "is_real_example": tf.io.FixedLenFeature([], tf.int64),
  }


def decode_record(record, seq_length, is_regression=False):
  """A serialized record -> dict of tensors; int64 is cast to int32 as Google does."""
  example = tf.io.parse_single_example(record, _feature_spec(seq_length, is_regression))
  return {k: tf.cast(v, tf.int32) if v.dtype == tf.int64 else v for k, v in example.items()}


def file_based_input_fn_builder(input_file, seq_length, is_training, drop_remainder,
                                is_regression=False, shuffle_buffer=100, seed=None):
  """Google's builder: returns input_fn(params) -> batched dataset of feature dicts.

  Training data is repeated forever and shuffled (buffer 100, as Google);
  eval/predict data is read once in file order. `params["batch_size"]` sets the
  batch size; with `drop_remainder` a last partial batch is dropped (pad the
  examples with `pad_to_batch_multiple` first to keep every example).
  """
  if not tf.io.gfile.exists(input_file):
    raise FileNotFoundError(f"TFRecord file not found: {input_file}")

  def input_fn(params):
    d = tf.data.TFRecordDataset(input_file)
    if is_training:
      d = d.repeat().shuffle(buffer_size=shuffle_buffer, seed=seed)
    d = d.map(lambda r: decode_record(r, seq_length, is_regression),
              num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    d = d.batch(params["batch_size"], drop_remainder=drop_remainder)
    return d.prefetch(tf.data.AUTOTUNE)

  return input_fn

