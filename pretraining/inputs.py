"""The pre-training input files, checked up front against the flags and the model's config.

Records have Google's features (`pretraining_data.features`), so files from
Google's create_pretraining_data.py and from ours are read alike.
"""

import time

from absl import logging
import tensorflow as tf

from fileio import InputError, count_records, file_size
from pretraining_data import features as features_lib


def _first_example(path):
  try:
    records = list(tf.data.TFRecordDataset(path).take(1).as_numpy_iterator())
  except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as e:
    raise InputError(f"{path}: not a readable TFRecord file ({e.message.splitlines()[0]})"
                     ) from None
  if not records:
    raise InputError(f"{path}: holds no record")
  try:
    return tf.train.Example.FromString(records[0])
  except Exception:  # pylint: disable=broad-except  (protobuf's DecodeError)
    raise InputError(f"{path}: the first record is not a tf.train.Example") from None


def check_records(files, max_seq_length, max_predictions_per_seq, bert_config):
  """Checks every record's framing and the first record's features; returns `dynamic`.

  Catches, before any training, damaged or cut files (which TensorFlow's reader
  would read to the damage, or take for their end), files that are not
  pre-training records, the wrong `max_seq_length` / `max_predictions_per_seq`,
  and ids the model's embeddings cannot hold. Errors name the file and what differs.
  dynamic: the records have no masked-LM features (create_pretraining_data.py
  --dynamic_masking); the first file decides and every file must agree.
  """
  bert_config.check_seq_length(max_seq_length)
  dynamic = None
  flag_of = {"seq": "max_seq_length", "pred": "max_predictions_per_seq", 1: None}
  for path in files:
    example = _first_example(path)
    feature_map = example.features.feature
    if dynamic is None:
      dynamic = features_lib.MASK_FEATURES[0] not in feature_map
      lengths = features_lib.feature_lengths(max_seq_length, max_predictions_per_seq, dynamic)
    elif dynamic == (features_lib.MASK_FEATURES[0] in feature_map):
      raise InputError(f"{path}: {'has' if dynamic else 'lacks'} masked-LM features but "
                       f"{files[0]} {'lacks' if dynamic else 'has'} them: do not mix records "
                       "written with and without --dynamic_masking")
    problems = []
    for name, kind, length_key in features_lib.features(dynamic):
      if name not in feature_map:
        problems.append(f"feature {name!r} is missing")
        continue
      values = getattr(feature_map[name], f"{kind}_list").value
      if feature_map[name].WhichOneof("kind") != f"{kind}_list":
        problems.append(f"feature {name!r} is {feature_map[name].WhichOneof('kind')}, "
                        f"expected {kind}_list")
      elif len(values) != lengths[name]:
        flag = flag_of[length_key]
        hint = f" (--{flag}={lengths[name]})" if flag else ""
        problems.append(f"feature {name!r} has length {len(values)}, expected "
                        f"{lengths[name]}{hint}")
    if not problems:
      ids = feature_map["input_ids"].int64_list.value
      lm_ids = [] if dynamic else feature_map["masked_lm_ids"].int64_list.value
      segments = feature_map["segment_ids"].int64_list.value
      top = max(max(ids), max(lm_ids, default=0))
      if top >= bert_config.vocab_size:
        problems.append(f"token id {top} >= the model's vocab_size "
                        f"{bert_config.vocab_size} (another vocabulary?)")
      if max(segments) >= bert_config.type_vocab_size:
        problems.append(f"segment id {max(segments)} >= the model's type_vocab_size "
                        f"{bert_config.type_vocab_size}")
    if problems:
      raise InputError(f"{path}: the first record does not match: " + "; ".join(problems))
  start, count = time.perf_counter(), 0
  for path in files:
    count += count_records(path)
  logging.info("Checked %d input file(s): %d records (%.1f MB), every CRC read, in %.1f s",
               len(files), count, sum(file_size(path) for path in files) / 1e6,
               time.perf_counter() - start)
  return dynamic
