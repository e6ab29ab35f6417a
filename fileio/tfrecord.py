"""TFRecord framing in pure Python, so that writers need no TensorFlow import.

Each record is: length (uint64 LE), masked CRC32C of the length, data, masked
CRC32C of the data, as `tf.io.TFRecordWriter` writes it. `example_record`
frames a `tf.train.Example` and `count_records` reads a file through
TensorFlow's reader (each imports TensorFlow when first called).
"""

import struct

import google_crc32c

from fileio.filesystem import file_size, open_file
from fileio.patterns import InputError


def _mask(crc):
  return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _masked_crc(data):
  return _mask(google_crc32c.value(data))


class _RecordHeaders(dict):
  """The 12 bytes (length, masked CRC32C of the length) before a record, keyed by its length."""

  def __missing__(self, length):
    header = struct.pack("<Q", length)
    self[length] = value = header + struct.pack("<I", _masked_crc(header))
    return value


_RECORD_HEADERS = _RecordHeaders()
_FOOTER = struct.Struct("<I")


def frame_many(records, prefixes=None):
  """Many records framed end to end -> (bytes, ends of the records [n]).

  `prefixes`: optional {len(data): bytes} that go before each record's data, inside the
  record (a message's tag and length), so that data need not be copied to prepend them.
  """
  headers, footer, extend, value = (
      _RECORD_HEADERS, _FOOTER.pack, google_crc32c.extend, google_crc32c.value)
  if len(headers) > 1 << 16:  # a cache of the lengths seen, bounded
    headers.clear()
  pieces, ends, end = [], [], 0
  add = pieces.extend
  for data in records:
    size = len(data)
    if prefixes is None:
      add((headers[size], data, footer(_mask(value(data)))))
    else:
      prefix = prefixes[size]
      size += len(prefix)
      add((headers[size], prefix, data, footer(_mask(extend(value(prefix), data)))))
    end += size + 16
    ends.append(end)
  return b"".join(pieces), ends


def frame_record(data):
  """The bytes of one TFRecord holding `data`."""
  return frame_many((data,))[0]


def count_records(path):
  """The number of records in the TFRecord file `path`, every length and CRC checked.

  Damage (a cut inside a record, a CRC mismatch) raises InputError naming the
  file, the record and its byte offset. TensorFlow's reader checks the CRCs
  fastest, but takes a file cut inside a record header for its end and names
  no offset: the records' bytes must add up to the file's size, and any doubt
  is settled by `_scan`, which names the damage.
  """
  import tensorflow as tf  # pylint: disable=import-outside-toplevel  (see the docstring)
  batches = tf.data.TFRecordDataset(path, buffer_size=1 << 24).batch(4096)
  try:
    count, data_bytes = batches.reduce(
        (tf.constant(0, tf.int64), tf.constant(0, tf.int64)),
        lambda total, batch: (total[0] + tf.size(batch, tf.int64),
                              total[1] + tf.reduce_sum(tf.cast(tf.strings.length(batch),
                                                               tf.int64))))
  except tf.errors.OpError:  # damage, or a file TensorFlow cannot read: named by _scan
    return _scan(path)
  count = int(count)
  if int(data_bytes) + 16 * count != file_size(path):
    return _scan(path)
  return count


def _scan(path):
  """count_records in Python, one record at a time: slower, but names the damage."""
  offset = count = 0
  with open_file(path, "rb") as f:
    while header := f.read(12):
      if len(header) < 12:
        raise InputError(f"{_where(path, count, offset)} is cut: the file ends {len(header)} "
                         "bytes into its 12-byte header (a partial copy?)")
      length, length_crc = struct.unpack("<QI", header)
      if _masked_crc(header[:8]) != length_crc and offset == 0:
        raise InputError(f"{path}: not a TFRecord file (its first bytes are no record header: "
                         "text, or another format?)")
      if _masked_crc(header[:8]) != length_crc:
        raise InputError(f"{_where(path, count, offset)} is damaged: its length fails its CRC "
                         "(not a TFRecord file, or corrupted)")
      body = f.read(length + 4)
      if len(body) < length + 4:
        raise InputError(f"{_where(path, count, offset)} is cut: the file ends {len(body)} "
                         f"bytes into its {length + 4}-byte body (a partial copy?)")
      if _masked_crc(body[:length]) != struct.unpack("<I", body[length:])[0]:
        raise InputError(f"{_where(path, count, offset)} is damaged: its data fails its CRC")
      offset += 16 + length
      count += 1
  return count


def _where(path, count, offset):
  return f"{path}: record {count + 1} (at byte {offset})"


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
