"""Progress lines (absl logging) and TensorBoard scalars from the chief."""

import shutil
import tempfile

from absl import logging
import tensorflow as tf
from tensorflow.core.framework import summary_pb2

# TensorBoard's scalar-plugin tag, so the runtime does not need tensorboard.
_SCALAR_METADATA = summary_pb2.SummaryMetadata(
    plugin_data=summary_pb2.SummaryMetadata.PluginData(
        plugin_name='scalars')).SerializeToString()


def format_scalars(scalars):
  """'name = value' pairs, sorted by name, for progress lines."""
  return ', '.join(f'{name} = {value:.6g}'
                   for name, value in sorted(scalars.items()))


def log_progress(step, num_steps, scalars):
  logging.info('step %d/%d: %s', step, num_steps, format_scalars(scalars))


class ScalarWriter:
  """Writes scalar summaries to `logdir` on the chief.

  Other workers write to a temporary directory deleted on `close`: every
  worker runs the same loop code (reading distributed metrics is collective).
  """

  def __init__(self, logdir, is_chief):
    self._tmpdir = None if is_chief else tempfile.mkdtemp(prefix='summaries_')
    self._writer = tf.summary.create_file_writer(self._tmpdir or logdir)

  def write(self, scalars, step):
    with self._writer.as_default():
      for name, value in scalars.items():
        tf.summary.write(name, tf.constant(value, tf.float32), step=step,
                         metadata=_SCALAR_METADATA)
    self._writer.flush()

  def close(self):
    self._writer.close()
    if self._tmpdir:
      shutil.rmtree(self._tmpdir, ignore_errors=True)


def read_scalars(logdir):
  """{tag: {step: value}} of the scalars in logdir's event files (what ScalarWriter wrote)."""
  scalars = {}
  for path in tf.io.gfile.glob(f'{logdir}/events.out.tfevents.*'):
    for record in tf.data.TFRecordDataset(path):
      event = tf.compat.v1.Event.FromString(record.numpy())
      for value in event.summary.value:
        scalars.setdefault(value.tag, {})[event.step] = float(
            tf.make_ndarray(value.tensor))
  return scalars
