"""The kernel family: which implementation of the model's pieces runs, chosen once per process.

"fused": our CPU-tuned pieces, `MatmulDense`, the 16-bit-mask `Dropout`,
`LayerNorm` and GELU with hand-written gradients (the GELU as XLA-compiled
kernels in training) and the cross-entropy of `modeling.losses`.
"keras": Keras' stock layers and TensorFlow's plain ops, which GPUs and TPUs
run as well as anything. Both families hold the same variables under the same
names and compute the same values, so a checkpoint of one loads into the other.
"auto" (the default): "fused" on CPUs, "keras" when the job's devices include a
GPU or TPU: the fused pieces were tuned and measured on CPUs only.

Like Keras' mixed-precision policy, the choice is a setting, not an argument:
layers, heads and losses read `current_kernels()` when they are built (a layer
keeps what it read as `layer.kernels`), so nothing is looked up per step. The
job runner sets it from `--kernels` for the strategy's devices (`set_kernels`);
code that builds models itself uses the default ("auto" on this process's
devices) or `kernels_scope`, which is also how tests build both families.
"""

import contextlib

import tensorflow as tf

FAMILIES = ("fused", "keras")
AUTO = "auto"
KERNELS = (AUTO,) + FAMILIES  # what --kernels, `set_kernels` and `kernels_scope` take
_ACCELERATORS = frozenset({"GPU", "TPU"})

_current = None  # the family set, resolved; None: "auto", resolved at the first lookup


def resolve_kernels(kernels, devices=None):
  """The family ("fused" or "keras") that `kernels` (one of KERNELS) stands for.

  "auto" is "keras" when any of `devices` (device names such as a strategy's
  `extended.worker_devices`; default: this process's logical devices) is a GPU
  or TPU, else "fused". Raises ValueError naming KERNELS for anything else.
  """
  if not isinstance(kernels, str) or kernels not in KERNELS:
    raise ValueError(f"kernels must be one of {', '.join(map(repr, KERNELS))}, got {kernels!r}")
  if kernels != AUTO:
    return kernels
  if devices is None:
    devices = [device.name for device in tf.config.list_logical_devices()]
  types = {tf.DeviceSpec.from_string(device).device_type for device in devices}
  return "keras" if types & _ACCELERATORS else "fused"


def set_kernels(kernels, devices=None):
  """Sets the family that models and losses built from now on use; returns it (resolved).

  kernels, devices: as `resolve_kernels`.
  """
  global _current  # pylint: disable=global-statement
  _current = resolve_kernels(kernels, devices)
  return _current


def current_kernels():
  """The family ("fused" or "keras") set by `set_kernels` or `kernels_scope`; when none is,
  "auto" on this process's devices (resolved once)."""
  if _current is None:
    set_kernels(AUTO)
  return _current


@contextlib.contextmanager
def kernels_scope(kernels, devices=None):
  """`set_kernels(kernels, devices)` for the block (which gets the family); the setting
  before it is restored on exit."""
  global _current  # pylint: disable=global-statement
  previous = _current
  try:
    yield set_kernels(kernels, devices)
  finally:
    _current = previous
