"""Mixed precision: Keras dtype policies for the model, fp16 loss scaling."""

import contextlib

import tf_keras

DTYPES = ('float32', 'mixed_float16', 'mixed_bfloat16')


@contextlib.contextmanager
def policy_scope(dtype):
  """Builds the layers created under it with the Keras policy `dtype`.

  The previous global policy is restored on exit, so nothing stays global:
  layers keep the policy they were built with.
  """
  if dtype not in DTYPES:
    raise ValueError(f'dtype must be one of {DTYPES}, got {dtype!r}')
  previous = tf_keras.mixed_precision.global_policy()
  tf_keras.mixed_precision.set_global_policy(dtype)
  try:
    yield
  finally:
    tf_keras.mixed_precision.set_global_policy(previous)


def wrap_optimizer(optimizer, dtype):
  """Adds dynamic loss scaling for float16 (bfloat16 needs none)."""
  if dtype == 'mixed_float16':
    return tf_keras.mixed_precision.LossScaleOptimizer(optimizer)
  return optimizer
