"""The cost of run_pretraining's full input check: every TFRecord's length and CRCs read.

Writes --size_gb of pre-training-sized records (--record_bytes each, random
bytes: CRCs cannot shortcut them) to --work_dir, then reads the file back
with `fileio.count_records` (our check, which names the byte offset of any
damage) and with the **peer**, TensorFlow's own reader counting records
(`tf.data.TFRecordDataset` in batches of 4,096, which checks the same CRCs
but stops silently at a cut header). Best of --repeats, after one untimed read that warms the page
cache, so both read from memory.

  python bench/tfrecord_check.py [--size_gb=1] [--record_bytes=1400] [--work_dir=/tmp]
"""

import argparse
import os
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # pylint: disable=wrong-import-position

import fileio  # pylint: disable=wrong-import-position


def write_file(path, size_bytes, record_bytes):
  payload = np.random.default_rng(0).bytes(record_bytes * 64)
  records = [fileio.frame_record(payload[i * record_bytes:(i + 1) * record_bytes])
             for i in range(64)]
  block = b"".join(records)
  with open(path, "wb") as f:
    for _ in range(max(1, size_bytes // len(block))):
      f.write(block)


def tensorflow_count(path):
  """Records counted by TensorFlow's reader, in batches (its fastest way here)."""
  batches = tf.data.TFRecordDataset(path, buffer_size=1 << 24).batch(4096)
  count = batches.reduce(np.int64(0), lambda total, batch: total + tf.size(batch, tf.int64))
  return int(count)


def best_of(function, path, repeats):
  times, result = [], None
  for _ in range(repeats):
    start = time.perf_counter()
    result = function(path)
    times.append(time.perf_counter() - start)
  return min(times), result


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--size_gb", type=float, default=1.0)
  parser.add_argument("--record_bytes", type=int, default=1400,
                      help="payload per record; ~1,400 is a seq-128 pre-training example")
  parser.add_argument("--work_dir", default="/tmp")
  parser.add_argument("--repeats", type=int, default=3)
  args = parser.parse_args()
  path = os.path.join(args.work_dir, "tfrecord_check_bench.tfrecord")
  try:
    write_file(path, int(args.size_gb * 1e9), args.record_bytes)
    size = os.path.getsize(path)
    fileio.count_records(path)  # warms the page cache
    ours, count = best_of(fileio.count_records, path, args.repeats)
    peer, peer_count = best_of(tensorflow_count, path, args.repeats)
    assert count == peer_count, (count, peer_count)
  finally:
    if os.path.exists(path):
      os.remove(path)
  print(f"{size / 1e9:.2f} GB, {count:,} records of {args.record_bytes} bytes")
  print(f"fileio.count_records: {ours:.2f} s ({size / 1e9 / ours:.2f} GB/s)")
  print(f"tf.data.TFRecordDataset count (peer): {peer:.2f} s ({size / 1e9 / peer:.2f} GB/s)")
  print(f"ratio (peer time / ours, >1 = ours faster): {peer / ours:.2f}")


if __name__ == "__main__":
  main()
