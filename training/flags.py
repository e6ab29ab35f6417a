"""Flags that run_pretraining.py and run_classifier.py share: Google's TPU flags, strategy, precision.

Defined once here so the two scripts cannot drift apart; each script calls
`define_runtime_flags()` next to its own flags.
"""

from absl import flags

from training import precision, strategy


def define_runtime_flags():
  """Defines the where-and-how-to-run flags (names and defaults as Google's where Google has them)."""
  flags.DEFINE_bool("use_tpu", False, "Same as --distribution_strategy=tpu.")
  flags.DEFINE_string("tpu_name", None, "The Cloud TPU to use.")
  flags.DEFINE_string("tpu_zone", None, "GCE zone of the Cloud TPU.")
  flags.DEFINE_string("gcp_project", None, "GCP project of the Cloud TPU.")
  flags.DEFINE_string("master", None, "TPU address, used when tpu_name is not set.")
  flags.DEFINE_integer("num_tpu_cores", 8,
                       "Accepted for Google's scripts; the TPU strategy uses every core.")
  flags.DEFINE_enum("distribution_strategy", "one_device", strategy.STRATEGIES,
                    "tf.distribute strategy (multi_worker_mirrored reads TF_CONFIG).")
  flags.DEFINE_integer("num_gpus", None, "GPUs for the mirrored strategy (default: all).")
  flags.DEFINE_enum("dtype", "float32", precision.DTYPES,
                    "Compute precision (mixed_float16 uses dynamic loss scaling).")
  flags.DEFINE_bool("use_xla", False, "Compile the forward and backward pass with XLA.")
  flags.DEFINE_integer("log_steps", 100, "Steps between progress lines and summaries.")
  flags.DEFINE_integer("seed", None,
                       "Random seed (weights, dropout, data order); default: not seeded.")
