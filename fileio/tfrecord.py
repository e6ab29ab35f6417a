"""TFRecord framing in pure Python, so that writers need no TensorFlow import.

Each record is: length (uint64 LE), masked CRC32C of the length, data, masked
CRC32C of the data, as `tf.io.TFRecordWriter` writes it. `example_record`
frames a `tf.train.Example` (it imports TensorFlow when first called).
"""

import struct

import google_crc32c


def _masked_crc(data):
  crc = google_crc32c.value(data)
  return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame_record(data):
  """The bytes of one TFRecord holding `data`."""
  header = struct.pack("<Q", len(data))
  return b"".join((header, struct.pack("<I", _masked_crc(header)), data,
                   struct.pack("<I", _masked_crc(data))))


def example_record(values):
  """One TFRecord holding a tf.train.Example of {name: ints, or floats} (the features' order)."""
  import tensorflow as tf  # pylint: disable=import-outside-toplevel  (see the docstring)
  feature = {}
  for name, value in values.items():
    value = list(value)
    feature[name] = (tf.train.Feature(float_list=tf.train.FloatList(value=value))
                     if value and isinstance(value[0], float) else
                     tf.train.Feature(int64_list=tf.train.Int64List(value=value)))
  example = tf.train.Example(features=tf.train.Features(feature=feature))
  return frame_record(example.SerializeToString())
