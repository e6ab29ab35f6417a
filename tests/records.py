"""TFRecord files of Google's features written from arrays, or copied with one record changed."""

import numpy as np
import tensorflow as tf


def write_records(path, arrays):
  """One TFRecord file of Google's features from {feature: [N, length] array}."""
  with tf.io.TFRecordWriter(str(path)) as writer:
    for i in range(len(arrays["input_ids"])):
      feature = {}
      for name, values in arrays.items():
        row = np.reshape(values[i], [-1])
        if values.dtype.kind == "f":
          feature[name] = tf.train.Feature(float_list=tf.train.FloatList(value=row))
        else:
          feature[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=row))
      writer.write(tf.train.Example(
          features=tf.train.Features(feature=feature)).SerializeToString())


def copy_records_with_one_changed(source, target, index, change):
  """Copies TFRecord file `source` to `target`, record `index` (0-based) passed through `change`
  (a function editing the record's feature map in place); returns `target`."""
  with tf.io.TFRecordWriter(str(target)) as writer:
    for i, serialized in enumerate(tf.data.TFRecordDataset(str(source)).as_numpy_iterator()):
      if i == index:
        example = tf.train.Example.FromString(serialized)
        change(example.features.feature)
        serialized = example.SerializeToString()
      writer.write(serialized)
  return str(target)
