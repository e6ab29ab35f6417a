"""tf.train.Example records in protobuf wire format, written atomically as sharded TFRecords.

Encoding by hand (no TensorFlow import, no proto objects) is what lets workers
start in milliseconds and serialise an instance in microseconds. The bytes are
a valid `tf.train.Example`: features in Google's order, int64/float values packed.
A batch of records travels as one byte string and its offsets (`Records`): a
worker process hands it back in one piece, not as a Python object per record.
"""

import collections.abc
import struct

import numpy as np

from fileio import AtomicFile, OutputError, check_outputs
from fileio.tfrecord import frame_many
from fileio.atomic import name_output
from pretraining_data import features


def _varint(value):
  out = bytearray()
  while value > 0x7F:
    out.append((value & 0x7F) | 0x80)
    value >>= 7
  out.append(value)
  return bytes(out)


def _field(tag, payload):
  """A length-delimited protobuf field: tag byte, varint length, payload."""
  return tag + _varint(len(payload)) + payload


_TAG1, _TAG2, _TAG3 = b"\x0a", b"\x12", b"\x1a"  # field 1/2/3, wire type 2
_ONE_F32 = struct.pack("<f", 1.0)
_ZERO_F32 = struct.pack("<f", 0.0)


def varint_rows(values):
  """Packed varints of each row of a non-negative int matrix [n, k] -> (bytes, offsets [n + 1]).

  Row i is bytes[offsets[i]:offsets[i + 1]]; vectorised so that no Python
  code runs per value.
  """
  v = np.asarray(values)
  largest, width = int(v.max(initial=0)), 1
  while largest >> (7 * width):
    width += 1
  v = v.astype(np.uint32 if largest < 1 << 32 else np.uint64, copy=False)
  groups = np.empty(v.shape + (width,), np.uint8)  # [n, k, width]: 7 bits each, low first
  used = np.empty(v.shape + (width,), bool)  # the value needs byte j
  for j in range(width):
    more = v >= (1 << (7 * (j + 1)))
    groups[..., j] = ((v >> (7 * j)) & 0x7F) | (more.astype(v.dtype) << 7)
    used[..., j] = v >= (1 << (7 * j)) if j else True
  # Row-major: row, value, byte. (np.compress: half the time of groups[used] on such masks.)
  data = np.compress(used.reshape(-1), groups.reshape(-1)).tobytes()
  offsets = np.zeros(v.shape[0] + 1, np.int64)
  np.cumsum(used.sum(axis=(1, 2)), out=offsets[1:])
  return data, offsets.tolist()


class _Headers(dict):
  """Wire bytes preceding a packed payload of n bytes for one feature, keyed by n."""

  def __init__(self, name, kind):
    super().__init__()
    self._key = _field(_TAG1, name.encode())
    self._list_tag = _TAG3 if kind == "int64" else _TAG2  # Feature.int64_list / float_list

  def __missing__(self, n):
    # Features.feature entry { key, value: Feature { <kind>_list: { packed value } } }
    value_list = _TAG1 + _varint(n)
    feature = self._list_tag + _varint(len(value_list) + n) + value_list
    entry = self._key + _TAG2 + _varint(len(feature) + n) + feature
    head = _TAG1 + _varint(len(entry) + n) + entry
    self[n] = head
    return head


class Records(collections.abc.Sequence):
  """Framed records held end to end in a few byte strings (one per batch), with their ends.

  Indexing gives a record's bytes; `select` gives records in any order as memoryviews of
  the batches (no copy), which is how they are shuffled into the output files.
  """

  def __init__(self, batches=()):
    self._data = []  # [bytes] one per batch
    self._ends = []  # [int64 [n_b]] record ends within each batch
    for data, ends in batches:
      self._data.append(data)
      self._ends.append(np.asarray(ends, np.int64))
    self._count = sum(map(len, self._ends))

  @classmethod
  def from_list(cls, records):
    """One batch holding `records` (bytes) in order."""
    return cls([(b"".join(records), np.cumsum(np.fromiter(map(len, records), np.int64,
                                                          len(records))))])

  def extend(self, other):
    """Appends the batches of `other` (a Records; not copied)."""
    self._data.extend(other._data)  # pylint: disable=protected-access
    self._ends.extend(other._ends)  # pylint: disable=protected-access
    self._count += len(other)

  def __len__(self):
    return self._count

  def __getitem__(self, i):
    i = range(self._count)[i]  # negative indices count from the end; IndexError past it
    b = 0
    while i >= len(self._ends[b]):
      i -= len(self._ends[b])
      b += 1
    ends = self._ends[b]
    return self._data[b][int(ends[i - 1]) if i else 0:int(ends[i])]

  def __reduce__(self):
    return Records, (list(zip(self._data, self._ends)),)

  def select(self, order):
    """The records numbered `order` (over all batches, end to end), in that order:
    a list of memoryviews into the batches."""
    order = np.asarray(order, np.int64)
    if not self._ends:
      return []
    ends = np.concatenate(self._ends)  # [n] within its batch
    firsts = np.cumsum([0] + [len(e) for e in self._ends])  # [n_batches + 1]
    batch = np.repeat(np.arange(len(self._ends)), np.diff(firsts))  # [n]
    starts = ends.copy()
    starts[1:] = ends[:-1]
    starts[firsts[:-1][np.diff(firsts) > 0]] = 0  # first record of each batch starts at 0
    views = [memoryview(d) for d in self._data]
    return [views[b][s:e] for b, s, e in zip(
        batch[order].tolist(), starts[order].tolist(), ends[order].tolist())]


class _Prefixes(dict):
  """Bytes made by `make(key)`, made once per key."""

  def __init__(self, make):
    super().__init__()
    self._make = make

  def __missing__(self, key):
    self[key] = value = self._make(key)
    return value


class ExampleEncoder:
  """Serialises pre-training instances as `tf.train.Example` bytes (Google's feature order)."""

  def __init__(self, max_seq_length, max_predictions_per_seq):
    self.max_seq_length = max_seq_length
    self.max_predictions_per_seq = max_predictions_per_seq
    self._head = {name: _Headers(name, kind) for name, kind, _ in features.FEATURES}
    seq, pred = max_seq_length, max_predictions_per_seq
    self._mask_head = self._head["input_mask"][seq]
    self._segment_head = self._head["segment_ids"][seq]
    self._weights_head = self._head["masked_lm_weights"][4 * pred]
    self._labels = [self._head["next_sentence_labels"][1] + bytes([v]) for v in (0, 1)]
    # The Example's tag and length; input_mask, segment_ids and masked_lm_weights with their
    # headers, by lengths.
    self._example_head = _Prefixes(lambda n: _TAG1 + _varint(n))
    self._weights = _Prefixes(
        lambda n: self._weights_head + _ONE_F32 * n + _ZERO_F32 * (pred - n))
    self._masks = _Prefixes(lambda n: self._mask_head + b"\x01" * n + b"\x00" * (seq - n))
    self._segments = _Prefixes(lambda key: self._segment_head + b"\x00" * (key[1] + 2)
                               + b"\x01" * (key[0] - key[1] - 2) + b"\x00" * (seq - key[0]))

  def encode_batch(self, input_ids, lengths, a_lengths, is_random_next, masked=None):
    """Instances -> their framed TFRecords, as `Records`.

    input_ids [n, L] (masked ones when `masked`, the `masking.MaskedInputs`,
    is given); per-instance lengths, segment-A lengths and labels. Without
    `masked` the records are dynamic-masking ones: no masked-LM features.
    """
    ids, ids_off = varint_rows(input_ids)
    h_ids, masks, segments, labels = (
        self._head["input_ids"], self._masks, self._segments, self._labels)
    rows = zip(ids_off, ids_off[1:], lengths.tolist(), a_lengths.tolist(),
               np.asarray(is_random_next).tolist())
    if masked is None:
      examples = [b"".join((h_ids[i1 - i0], ids[i0:i1], masks[n], segments[n, a_len],
                            labels[random_next]))
                  for i0, i1, n, a_len, random_next in rows]
    else:
      pos, pos_off = varint_rows(masked.positions)
      lbl, lbl_off = varint_rows(masked.label_ids)
      h_pos, h_lbl = self._head["masked_lm_positions"], self._head["masked_lm_ids"]
      weights = self._weights
      examples = [b"".join((h_ids[i1 - i0], ids[i0:i1], masks[n], segments[n, a_len],
                            h_pos[p1 - p0], pos[p0:p1], h_lbl[l1 - l0], lbl[l0:l1],
                            weights[n_pred], labels[random_next]))
                  for (i0, i1, n, a_len, random_next), p0, p1, l0, l1, n_pred in zip(
                      rows, pos_off, pos_off[1:], lbl_off, lbl_off[1:],
                      masked.num_predictions.tolist())]
    return Records([frame_many(examples, self._example_head)])


_WRITE_BATCH = 1024  # records per write() of `write_to`


class ShardedRecordWriter:
  """Writes framed records round-robin over `paths` (or to a chosen one), each a
  `fileio.AtomicFile`.

  Only `commit()` renames the temporary files to their final names, so a crash,
  an exception or Ctrl-C never leaves a file that looks complete; `abort()`
  (called on any exception inside a `with` block) deletes them.
  """

  def __init__(self, paths, overwrite=False):
    check_outputs(paths, overwrite)
    self.paths = list(paths)
    self._outputs = []
    try:
      for path in self.paths:
        self._outputs.append(AtomicFile(path, "wb", overwrite))
    except OSError as e:
      self.abort()
      raise OutputError(f"cannot create output file: {e}") from None
    self.temp_paths = [output.temp_path for output in self._outputs]
    self._files = [output.file for output in self._outputs]
    self._next = 0
    self.count = 0

  def write(self, record):
    self.extend((record,))

  def extend(self, records):
    """Writes `records` round-robin (as `write` each), joined per output file."""
    n, start = len(self._files), self._next
    for j in range(min(n, len(records))):
      self.write_to((start + j) % n, records[j::n])
    self._next = (start + len(records)) % n

  def write_to(self, index, records):
    """Appends `records` to output `index` (leaves the round-robin position alone).

    Joined in batches: one write per record is slow on remote files, one join of all
    of them would copy a shard's share of a chunk at once."""
    try:
      for i in range(0, len(records), _WRITE_BATCH):
        self._files[index].write(b"".join(records[i:i + _WRITE_BATCH]))
    except OSError as e:
      name_output(e, self.paths[index])
      raise
    self.count += len(records)

  def commit(self):
    try:
      while self._outputs:
        self._outputs[0].commit()  # on failure it deletes its own temporary file
        self._outputs.pop(0)
    finally:
      self.abort()  # the files not committed, if one failed

  def abort(self):
    for output in self._outputs:
      output.abort()
    self._outputs = []

  def __enter__(self):
    return self

  def __exit__(self, exc_type, exc, tb):
    if exc_type is None:
      self.commit()
    else:
      self.abort()
