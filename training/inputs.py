"""The one TFRecord input pipeline: feature spec in, per-replica batches of feature dicts out."""

import tensorflow as tf

from training import task as task_lib

# Records in the training shuffle buffer (Google's 100) and files read at once.
SHUFFLE_BUFFER = 100
CYCLE_LENGTH = 4


def parse_fn(feature_spec):
  """[B] serialized tf.train.Examples -> {name: [B, ...]}; int64 features become int32 (Google)."""
  def parse(serialized):
    parsed = tf.io.parse_example(serialized, feature_spec)
    return {name: tf.cast(t, tf.int32) if t.dtype == tf.int64 else t
            for name, t in parsed.items()}
  return parse


def trim_padding(features, multiple, names, mask_name="input_mask"):
  """Cuts the [B, S] features `names` to the batch's longest row, rounded up to `multiple`.

  Rows are Google's: real tokens first (mask 1), then padding. The encoder's
  output at real positions does not depend on how much padding follows, so
  short batches skip the work on padding; the rounding bounds how many shapes
  the compiled kernels see (S / multiple).
  """
  mask = features[mask_name]
  # At least 1: an empty batch (an empty serving request) keeps one column.
  longest = tf.maximum(tf.reduce_max(tf.reduce_sum(mask, axis=1)), 1)
  length = tf.minimum(tf.shape(mask)[1], (longest + multiple - 1) // multiple * multiple)
  return {name: t[:, :length] if name in names else t for name, t in features.items()}


def tfrecord_dataset_fn(files, feature_spec, mode, batch_size, seed=None,
                        drop_remainder=None, trim=None):
  """A `dataset_fn(input_context)` over TFRecord `files` for `Task.dataset_fn`.

  TRAIN: files sharded across input pipelines (records, when there are fewer
  files than pipelines), shuffled and repeated, read CYCLE_LENGTH at a time,
  records shuffled in a SHUFFLE_BUFFER; the last partial batch is dropped.
  EVAL / PREDICT: files read once in order. `drop_remainder` defaults to
  True for TRAIN and False otherwise (pre-training evaluation drops it, as
  Google's does). Batches are `get_per_replica_batch_size(batch_size)`.
  trim: None, or (multiple, names) for `trim_padding` on every batch.
  """
  files = list(files)
  is_training = mode == task_lib.TRAIN
  if drop_remainder is None:
    drop_remainder = is_training
  parse_only = parse_fn(feature_spec)

  def parse(serialized):  # trimmed in the same map as the parsing
    features = parse_only(serialized)
    return trim_padding(features, *trim) if trim else features

  def dataset_fn(context):
    shard_files = len(files) >= context.num_input_pipelines
    d = tf.data.Dataset.from_tensor_slices(files)
    if shard_files:
      d = d.shard(context.num_input_pipelines, context.input_pipeline_id)
    if is_training:
      d = d.repeat().shuffle(len(files), seed=seed)
      d = d.interleave(tf.data.TFRecordDataset, cycle_length=min(CYCLE_LENGTH, len(files)),
                       num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    else:
      d = d.flat_map(tf.data.TFRecordDataset)
    if not shard_files:
      d = d.shard(context.num_input_pipelines, context.input_pipeline_id)
    if is_training:
      d = d.shuffle(SHUFFLE_BUFFER, seed=seed)
    d = d.batch(context.get_per_replica_batch_size(batch_size), drop_remainder=drop_remainder)
    d = d.map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    return d.prefetch(tf.data.AUTOTUNE)

  return dataset_fn
