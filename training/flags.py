"""The runtime flags every trainer script shares, defined once from `RuntimeOptions`.

A script calls `define_runtime_flags()` next to its own flags, then
`flags.adopt_module_key_flags(training.flags)` so that `--help` lists them
with the script's own, and builds its options with `options_from_flags`;
`cli.run(main, interrupted_note=training.flags.interrupted_note,
terminated_note=training.flags.terminated_note)` says on Ctrl-C or SIGTERM (outside
the training loop, which saves and names its own) which checkpoint in --output_dir was kept.
"""

import dataclasses
import signal

from absl import flags

from training import checkpointing, optimizer, precision, runtime
from training import strategy as strategy_lib


def define_runtime_flags(flag_values=flags.FLAGS):
  """Defines one flag per `RuntimeOptions` field (Google's names and defaults where it has them)."""
  defaults = runtime.RuntimeOptions()
  fv = {"flag_values": flag_values}
  flags.DEFINE_bool("use_tpu", defaults.use_tpu, "Same as --distribution_strategy=tpu.", **fv)
  flags.DEFINE_string("tpu_name", defaults.tpu_name, "The Cloud TPU to use.", **fv)
  flags.DEFINE_string("tpu_zone", defaults.tpu_zone, "GCE zone of the Cloud TPU.", **fv)
  flags.DEFINE_string("gcp_project", defaults.gcp_project, "GCP project of the Cloud TPU.", **fv)
  flags.DEFINE_string("master", defaults.master, "TPU address, used when tpu_name is not set.",
                      **fv)
  flags.DEFINE_integer("num_tpu_cores", defaults.num_tpu_cores,
                       "Accepted for Google's scripts; the TPU strategy uses every core.", **fv)
  flags.DEFINE_enum("distribution_strategy", defaults.distribution_strategy,
                    strategy_lib.STRATEGIES,
                    "tf.distribute strategy (multi_worker_mirrored reads TF_CONFIG).", **fv)
  flags.DEFINE_integer("num_gpus", defaults.num_gpus,
                       "GPUs for the mirrored strategy (default: all).", **fv)
  flags.DEFINE_enum("dtype", defaults.dtype, precision.DTYPES,
                    "Compute precision (mixed_float16 uses dynamic loss scaling).", **fv)
  flags.DEFINE_bool("use_xla", defaults.use_xla,
                    "Compile the forward and backward pass with XLA.", **fv)
  flags.DEFINE_enum("kernels", defaults.kernels, runtime.KERNELS,
                    "fused = CPU-tuned kernels (measured on CPU); keras = stock Keras/TF ops.",
                    **fv)
  flags.DEFINE_enum("optimizer", defaults.optimizer, optimizer.OPTIMIZERS,
                    "adamw = Google's AdamWeightDecay; adamw_corrected = the same with Adam's "
                    "bias correction (PyTorch's/HF's AdamW); lamb = LAMB.", **fv)
  flags.DEFINE_integer("gradient_accumulation_steps", defaults.gradient_accumulation_steps,
                       "Batches of train_batch_size summed into one optimizer step.", **fv)
  flags.DEFINE_integer("iterations_per_loop", defaults.iterations_per_loop,
                       "Steps per call of the compiled training loop.", **fv)
  flags.DEFINE_integer("save_checkpoints_steps", defaults.save_checkpoints_steps,
                       "How often to save the model checkpoint.", **fv)
  flags.DEFINE_integer("keep_checkpoint_max", defaults.keep_checkpoint_max,
                       "Checkpoints kept in output_dir.", **fv)
  flags.DEFINE_integer("log_steps", defaults.log_steps,
                       "Steps between progress lines and summaries.", **fv)
  flags.DEFINE_integer("seed", defaults.seed,
                       "Random seed (weights, dropout, data order); default: not seeded.", **fv)


def options_from_flags(options_class, flag_values=flags.FLAGS, **overrides):
  """An `options_class` (a dataclass) from the flags of the same names, then `overrides`.

  A field no flag is named after keeps its default (a script may leave out an
  option its job does not use).
  """
  values = {f.name: getattr(flag_values, f.name) for f in dataclasses.fields(options_class)
            if f.name not in overrides and f.name in flag_values}
  return options_class(**values, **overrides)


def interrupted_note():
  """`cli.run`'s Ctrl-C note for a trainer: the checkpoint in --output_dir a rerun resumes."""
  return checkpointing.interrupted_note(flags.FLAGS.output_dir)


def terminated_note():
  """`cli.run`'s SIGTERM note for a trainer (see `interrupted_note`)."""
  return checkpointing.interrupted_note(flags.FLAGS.output_dir, signal.SIGTERM)
