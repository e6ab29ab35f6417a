"""The pre-training input files, checked up front against the flags and the model's config.

Records have Google's features (`pretraining_data.features`), so files from
Google's create_pretraining_data.py and from ours are read alike.
"""

import itertools
import time

from absl import logging
import numpy as np
import tensorflow as tf

from fileio import InputError, count_records, file_size
from pretraining_data import features as features_lib

# Records parsed at once by the check of every record.
CHECK_BATCH = 4096


def _example(serialized, where):
  try:
    return tf.train.Example.FromString(serialized)
  except Exception:  # pylint: disable=broad-except  (protobuf's DecodeError)
    raise InputError(f"{where} is not a tf.train.Example") from None


def _first_example(path):
  try:
    records = list(tf.data.TFRecordDataset(path).take(1).as_numpy_iterator())
  except (tf.errors.DataLossError, tf.errors.InvalidArgumentError):
    count_records(path)  # names what is wrong (not a TFRecord file, cut, damaged)
    raise InputError(f"{path}: not a readable TFRecord file") from None
  if not records:
    raise InputError(f"{path}: holds no record")
  return _example(records[0], f"{path}: record 1")


class _RecordChecker:
  """What training needs of each record: the features' kinds and lengths, ids the model holds."""

  def __init__(self, max_seq_length, max_predictions_per_seq, bert_config, dynamic):
    self.dynamic = dynamic
    self.lengths = features_lib.feature_lengths(max_seq_length, max_predictions_per_seq,
                                                dynamic)
    self.spec = features_lib.feature_spec(max_seq_length, max_predictions_per_seq, dynamic)
    # {feature: (exclusive bound, where it comes from)} for the ids the model looks up.
    vocab = (bert_config.vocab_size, "the model's vocab_size: records of another vocabulary?")
    self.bounds = {"input_ids": vocab,
                   "segment_ids": (bert_config.type_vocab_size, "the model's type_vocab_size")}
    if not dynamic:
      self.bounds.update(masked_lm_ids=vocab,
                         masked_lm_positions=(max_seq_length, "--max_seq_length"))

  def problems(self, example):
    """What in `example` (a tf.train.Example) training cannot use, as phrases; [] if none."""
    flag_of = {"seq": "max_seq_length", "pred": "max_predictions_per_seq", 1: None}
    feature_map = example.features.feature
    problems = []
    for name, kind, length_key in features_lib.features(self.dynamic):
      if name not in feature_map:
        problems.append(f"feature {name!r} is missing")
        continue
      values = getattr(feature_map[name], f"{kind}_list").value
      if feature_map[name].WhichOneof("kind") != f"{kind}_list":
        problems.append(f"feature {name!r} is {feature_map[name].WhichOneof('kind')}, "
                        f"expected {kind}_list")
      elif len(values) != self.lengths[name]:
        flag = flag_of[length_key]
        hint = f" (--{flag}={self.lengths[name]})" if flag else ""
        problems.append(f"feature {name!r} has length {len(values)}, expected "
                        f"{self.lengths[name]}{hint}")
      elif name in self.bounds:
        bound, why = self.bounds[name]
        outside = [v for v in values if not 0 <= v < bound]
        if outside:
          problems.append(f"feature {name!r} holds {outside[0]}, outside [0, {bound}) ({why})")
    return problems

  def check(self, example, where):
    problems = self.problems(example)
    if problems:
      raise InputError(f"{where} does not match: " + "; ".join(problems))

  def check_all(self, files, counts):
    """Parses every record of `files` (holding `counts` records) as training will.

    One tf.data pass finds the first batch with a record training would fail
    on (a later record of another length, an id outside the embeddings); the
    Python check then names that record.
    """
    spec, bounds = self.spec, self.bounds

    @tf.autograph.experimental.do_not_convert
    def bad_rows(serialized):
      parsed = tf.io.parse_example(serialized, spec)
      return tf.reduce_any(tf.concat(
          [(parsed[name] < 0) | (parsed[name] >= bound) for name, (bound, _) in bounds.items()],
          axis=1), axis=1)

    batches = tf.data.TFRecordDataset(files).batch(CHECK_BATCH).map(
        bad_rows, num_parallel_calls=tf.data.AUTOTUNE).prefetch(1)
    iterator, start = iter(batches), 0
    while True:
      try:
        bad = next(iterator).numpy()
      except StopIteration:
        return
      except tf.errors.InvalidArgumentError as e:  # a record parse_example cannot read
        where = self._check_records(files, counts, start, CHECK_BATCH)
        raise InputError(f"{where} or one of the {CHECK_BATCH - 1} after it cannot be parsed "
                         f"({e.message.splitlines()[0]})") from None
      if bad.any():
        self._check_records(files, counts, start + int(np.argmax(bad)), 1)
      start += len(bad)

  def _check_records(self, files, counts, start, number):
    """Checks records start .. start + number - 1 of `files` read as one stream.

    Returns where the first one is ("<file>: record <n>").
    """
    ends = list(itertools.accumulate(counts))

    def where(index):
      file_index = int(np.searchsorted(ends, index, side="right"))
      return f"{files[file_index]}: record {index - ([0] + ends)[file_index] + 1}"

    records = tf.data.TFRecordDataset(files).skip(start).take(number).as_numpy_iterator()
    for index, serialized in enumerate(records, start):
      self.check(_example(serialized, where(index)), where(index))
    return where(start)


def check_records(files, max_seq_length, max_predictions_per_seq, bert_config):
  """Checks every record of `files` before any training; returns `dynamic`.

  Catches damaged or cut files (which TensorFlow's reader would read to the
  damage, or take for their end), files that are not pre-training records,
  the wrong `max_seq_length` / `max_predictions_per_seq` (from the first
  record, at once), and records anywhere that training would fail on or
  that hold ids the model's embeddings cannot. Errors name the file, the
  record and what differs. dynamic: the records have no masked-LM features
  (create_pretraining_data.py --dynamic_masking); the first file decides and
  every file must agree.
  """
  bert_config.check_seq_length(max_seq_length)
  checker = None
  for path in files:
    example = _first_example(path)
    has_masks = features_lib.MASK_FEATURES[0] in example.features.feature
    if checker is None:
      checker = _RecordChecker(max_seq_length, max_predictions_per_seq, bert_config,
                               dynamic=not has_masks)
    elif checker.dynamic == has_masks:
      raise InputError(f"{path}: {'has' if has_masks else 'lacks'} masked-LM features but "
                       f"{files[0]} {'lacks' if has_masks else 'has'} them: do not mix records "
                       "written with and without --dynamic_masking")
    checker.check(example, f"{path}: record 1")
  start = time.perf_counter()
  counts = [count_records(path) for path in files]
  checker.check_all(files, counts)
  logging.info("Checked %d input file(s): %d records (%.1f MB), every CRC and id read, in %.1f s",
               len(files), sum(counts), sum(file_size(path) for path in files) / 1e6,
               time.perf_counter() - start)
  return checker.dynamic
