"""The cost of run_pretraining's full input check: every TFRecord's length, CRCs and ids read.

Writes --size_gb of pre-training records (Google's features at --max_seq_length
and --max_predictions_per_seq, random ids in BERT's 30,522-word vocabulary) to
--work_dir, then times (a) `fileio.count_records` (the CRC pass, which names the
byte offset of any damage) against the **peer**, TensorFlow's own reader
counting records (`tf.data.TFRecordDataset` in batches of 4,096, which checks
the same CRCs but stops silently at a cut header), and (b) the whole check
run_pretraining makes before training, `pretraining.inputs.check_records` (the
CRC pass plus a parse of every record, ids against the vocabulary). Best of
--repeats, after one untimed read that warms the page cache, so all read from memory.

  python bench/tfrecord_check.py [--size_gb=1] [--max_seq_length=128]
                                 [--max_predictions_per_seq=20] [--work_dir=/tmp]
"""

import argparse
import os
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import cli  # pylint: disable=unused-import,wrong-import-position  # our scripts' TensorFlow settings (oneDNN)
import tensorflow as tf  # pylint: disable=wrong-import-position

import fileio  # pylint: disable=wrong-import-position
import modeling  # pylint: disable=wrong-import-position
from pretraining.inputs import check_records  # pylint: disable=wrong-import-position
from pretraining_data import features as features_lib  # pylint: disable=wrong-import-position

VOCAB_SIZE = 30522


def write_file(path, size_bytes, max_seq_length, max_predictions_per_seq):
  """Repeats 64 distinct records (random ids, full length) up to size_bytes; returns
  the bytes of one record."""
  rng = np.random.default_rng(0)
  lengths = features_lib.feature_lengths(max_seq_length, max_predictions_per_seq)
  records = []
  for _ in range(64):
    values = {name: rng.integers(0, VOCAB_SIZE, lengths[name]).tolist()
              for name in ("input_ids", "masked_lm_ids")}
    values.update(input_mask=[1] * max_seq_length,
                  segment_ids=rng.integers(0, 2, max_seq_length).tolist(),
                  masked_lm_positions=sorted(rng.choice(max_seq_length, max_predictions_per_seq,
                                                        replace=False).tolist()),
                  masked_lm_weights=[1.0] * max_predictions_per_seq, next_sentence_labels=[1])
    records.append(fileio.example_record(
        {name: values[name] for name, _, _ in features_lib.FEATURES}))
  block = b"".join(records)
  with open(path, "wb") as f:
    for _ in range(max(1, size_bytes // len(block))):
      f.write(block)
  return len(block) / 64


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
  parser.add_argument("--max_seq_length", type=int, default=128)
  parser.add_argument("--max_predictions_per_seq", type=int, default=20)
  parser.add_argument("--work_dir", default="/tmp")
  parser.add_argument("--repeats", type=int, default=3)
  args = parser.parse_args()
  path = os.path.join(args.work_dir, "tfrecord_check_bench.tfrecord")
  config = modeling.BertConfig(vocab_size=VOCAB_SIZE)

  def full_check(path):
    return check_records([path], args.max_seq_length, args.max_predictions_per_seq, config)
  try:
    record_bytes = write_file(path, int(args.size_gb * 1e9), args.max_seq_length,
                              args.max_predictions_per_seq)
    size = os.path.getsize(path)
    fileio.count_records(path)  # warms the page cache
    ours, count = best_of(fileio.count_records, path, args.repeats)
    peer, peer_count = best_of(tensorflow_count, path, args.repeats)
    assert count == peer_count, (count, peer_count)
    full, _ = best_of(full_check, path, args.repeats)
  finally:
    if os.path.exists(path):
      os.remove(path)
  print(f"{size / 1e9:.2f} GB, {count:,} records of {record_bytes:.0f} bytes")
  print(f"fileio.count_records: {ours:.2f} s ({size / 1e9 / ours:.2f} GB/s)")
  print(f"tf.data.TFRecordDataset count (peer): {peer:.2f} s ({size / 1e9 / peer:.2f} GB/s)")
  print(f"ratio (peer time / ours, >1 = ours faster): {peer / ours:.2f}")
  print(f"run_pretraining's whole check (CRCs + every record parsed): {full:.2f} s "
        f"({size / 1e9 / full:.2f} GB/s)")


if __name__ == "__main__":
  main()
