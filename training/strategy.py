"""Builds a tf.distribute strategy from a name, and tells the chief apart."""

import json
import os

import tensorflow as tf

from cli import FlagError

STRATEGIES = ('one_device', 'mirrored', 'multi_worker_mirrored', 'tpu')


def split_cpu(num_devices):
  """Splits the physical CPU into `num_devices` logical devices.

  Lets MirroredStrategy run on a CPU-only machine (tests, debugging). Must be
  called before TensorFlow initializes its devices.
  """
  cpu = tf.config.list_physical_devices('CPU')[0]
  tf.config.set_logical_device_configuration(
      cpu, [tf.config.LogicalDeviceConfiguration()] * num_devices)


def build_strategy(name, num_gpus=None, tpu_name=None, tpu_zone=None,
                   gcp_project=None):
  """Returns the strategy called `name` (one of STRATEGIES).

  one_device: the first GPU, else the CPU. mirrored: the first `num_gpus`
  GPUs; every GPU when num_gpus is None; every logical CPU device (see
  `split_cpu`) when num_gpus is 0 or None on a machine without GPUs.
  multi_worker_mirrored: the cluster in the TF_CONFIG environment variable.
  tpu: the TPU `tpu_name` (in `tpu_zone` of `gcp_project`).
  """
  if name == 'one_device':
    gpus = tf.config.list_logical_devices('GPU')
    return tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else '/cpu:0')
  if name == 'mirrored':
    gpus = [d.name for d in tf.config.list_logical_devices('GPU')]
    if num_gpus is None:
      num_gpus = len(gpus)
    if len(gpus) < num_gpus:
      raise FlagError(f'num_gpus={num_gpus} but only {len(gpus)} GPUs are '
                       'visible')
    devices = (gpus[:num_gpus] or
               [d.name for d in tf.config.list_logical_devices('CPU')])
    return tf.distribute.MirroredStrategy(devices)
  if name == 'multi_worker_mirrored':
    if 'TF_CONFIG' not in os.environ:
      raise FlagError('multi_worker_mirrored needs the cluster in the '
                       'TF_CONFIG environment variable')
    return tf.distribute.MultiWorkerMirroredStrategy()
  if name == 'tpu':
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
        tpu=tpu_name, zone=tpu_zone, project=gcp_project)
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver)
  raise FlagError(f'distribution strategy must be one of {STRATEGIES}, '
                   f'got {name!r}')


def is_multi_worker(strategy):
  return isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)


def is_chief(strategy):
  """Whether this worker writes checkpoints and summaries.

  Single-worker strategies: always. Multi-worker: the "chief" task, or worker
  0 when the cluster has no chief (TF_CONFIG convention).
  """
  if not is_multi_worker(strategy):
    return True
  resolver = strategy.cluster_resolver
  task_type, task_id = resolver.task_type, resolver.task_id
  if task_type in (None, 'chief'):
    return True
  cluster = json.loads(os.environ.get('TF_CONFIG', '{}')).get('cluster', {})
  return task_type == 'worker' and task_id == 0 and 'chief' not in cluster

