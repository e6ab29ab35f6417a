"""Builds a tf.distribute strategy from a name, and tells the chief apart.

Under MultiWorkerMirroredStrategy the chief also leaves last (`_leave_last`), and
SIGTERM stays ours (see `training.preemption`).
"""

import atexit
import json
import os
import re
import signal
import socket
import threading
import time

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
    handler = signal.getsignal(signal.SIGTERM)
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    if handler is not None and threading.current_thread() is threading.main_thread():
      # TensorFlow's coordination service installs a SIGTERM handler of its own,
      # which swallows the signal: ours (cli's, then training.preemption's) again.
      signal.signal(signal.SIGTERM, handler)
    if is_chief(strategy):
      atexit.register(_leave_last, strategy.cluster_resolver)
    return strategy
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




def lost_peer(strategy, error):
  """The task a peer error (`training.loop.PEER_ERRORS`) names other than this one, as
  "worker 1 (host:port)", or None if it names none."""
  resolver = strategy.cluster_resolver
  me = (resolver.task_type, resolver.task_id)
  for job, task in re.findall(r'/job:(\w+)/(?:replica:\d+/)?task:(\d+)', error.message):
    if (job, int(task)) != me:
      try:
        address = resolver.cluster_spec().task_address(job, int(task))
      except (KeyError, ValueError):
        address = None
      return f'{job} {task}' + (f' ({address})' if address else '')
  return None


def _leave_last(resolver, timeout=60.0):
  """At the chief's exit: waits (up to `timeout` seconds) until the other tasks have ended.

  The chief hosts the coordination service. A worker that outlives it by a
  heartbeat (~5 s: a slower last evaluation, say) logs `E... Failed to send RPC
  to coordination service`, and Python never calls the agents' shutdown, so
  TensorFlow's shutdown barrier does not help. A task has ended when its
  server's port no longer takes connections.
  """
  me = (resolver.task_type, resolver.task_id)
  others = [address for job, addresses in resolver.cluster_spec().as_dict().items()
            if job in ('chief', 'worker')
            for task, address in enumerate(addresses) if (job, task) != me]
  deadline = time.time() + timeout
  while others and time.time() < deadline:
    others = [address for address in others if _takes_connections(address)]
    if others:
      time.sleep(0.2)


def _takes_connections(address):
  host, port = address.rsplit(':', 1)
  try:
    with socket.create_connection((host.strip('[]'), int(port)), timeout=1):
      return True
  except OSError:
    return False
