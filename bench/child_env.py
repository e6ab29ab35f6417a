"""The environment the benches start their child processes with."""

import os


def child_env(threads, tf_log_level="1"):
  """os.environ with TensorFlow's and OpenMP's thread pools at `threads` (0: their defaults)
  and TensorFlow's C++ log level, so that sides given the same threads share a machine alike."""
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL=tf_log_level)
  if threads:
    env.update(TF_NUM_INTRAOP_THREADS=str(threads), TF_NUM_INTEROP_THREADS=str(threads),
               OMP_NUM_THREADS=str(threads))
  return env
