"""TFRecord framing in pure Python, so that writers need no TensorFlow import.

Each record is: length (uint64 LE), masked CRC32C of the length, data, masked
CRC32C of the data, as `tf.io.TFRecordWriter` writes it.
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
