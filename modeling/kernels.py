"""The `kernels` build option: which implementation of the model's pieces runs.

"fused" (the default): our CPU-tuned pieces, `MatmulDense`, the 16-bit-mask
`Dropout`, `LayerNorm` and GELU with hand-written gradients (the GELU as
XLA-compiled kernels in training) and the cross-entropy of `modeling.losses`.
"keras": Keras' stock layers and TensorFlow's plain ops, which GPUs and TPUs
run as well as anything. Both paths hold the same variables under the same
names and compute the same values, so a checkpoint of one loads into the other.
"""

KERNELS = ("fused", "keras")


def check_kernels(kernels):
  """Returns `kernels` if it is one of KERNELS; raises ValueError naming them otherwise."""
  if not isinstance(kernels, str) or kernels not in KERNELS:
    raise ValueError(f"kernels must be one of {', '.join(map(repr, KERNELS))}, got {kernels!r}")
  return kernels
