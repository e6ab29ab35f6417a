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


def tfrecord_dataset_fn(files, feature_spec, mode, batch_size, seed=None,
                        drop_remainder=None):
  """A `dataset_fn(input_context)` over TFRecord `files` for `Task.dataset_fn`.

  TRAIN: files sharded across input pipelines (records, when there are fewer
  files than pipelines), shuffled and repeated, read CYCLE_LENGTH at a time,
  records shuffled in a SHUFFLE_BUFFER; the last partial batch is dropped.
  EVAL / PREDICT: files read once in order. `drop_remainder` defaults to
  True for TRAIN and False otherwise (pre-training evaluation drops it, as
  Google's does). Batches are `get_per_replica_batch_size(batch_size)`.
  """
  files = list(files)
  is_training = mode == task_lib.TRAIN
  if drop_remainder is None:
    drop_remainder = is_training
  parse = parse_fn(feature_spec)

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
