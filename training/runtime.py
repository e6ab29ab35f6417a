"""`RuntimeOptions`: where and how a job runs, the same for every trainer.

Every trainer's options dataclass extends it (keyword-only fields), so the
strategy, precision, kernels, optimizer, accumulation, checkpoint and logging
settings are declared once (each field is also its flag, `cli.options`) and
honoured by one runner (`training.runner`).
"""

import dataclasses
import math
from typing import Optional

from cli import FlagError, options
from cli.options import option
from modeling.kernels import KERNELS  # the kernel family, which the runner sets for the job
from training import optimizer, precision
from training import strategy as strategy_lib


@dataclasses.dataclass(frozen=True, kw_only=True)
class RuntimeOptions:
  """Google's TPU flags and our runtime flags; names and defaults as Google's where it has them.

  gradient_accumulation_steps: batches of train_batch_size summed into one
    optimizer step. iterations_per_loop: steps per call of the compiled loop.
  """
  use_tpu: bool = option(False, "Same as --distribution_strategy=tpu.")
  tpu_name: Optional[str] = option(None, "The Cloud TPU to use.")
  tpu_zone: Optional[str] = option(None, "GCE zone of the Cloud TPU.")
  gcp_project: Optional[str] = option(None, "GCP project of the Cloud TPU.")
  master: Optional[str] = option(None, "TPU address, used when tpu_name is not set.")
  num_tpu_cores: int = option(8, "Accepted for Google's scripts; the TPU strategy uses every core.")
  distribution_strategy: str = option(
      "one_device", "tf.distribute strategy (multi_worker_mirrored reads TF_CONFIG).",
      choices=strategy_lib.STRATEGIES)
  num_gpus: Optional[int] = option(None, "GPUs for the mirrored strategy (default: all).")
  dtype: str = option("float32", "Compute precision (mixed_float16 uses dynamic loss scaling).",
                      choices=precision.DTYPES)
  use_xla: bool = option(False, "Compile the forward and backward pass with XLA.")
  kernels: str = option(
      "auto", "fused = CPU-tuned kernels (measured on CPU only); keras = stock Keras/TF ops; "
      "auto = fused when the strategy's devices are CPUs, keras on a GPU or TPU.",
      choices=KERNELS)
  optimizer: str = option(
      "adamw", "adamw = Google's AdamWeightDecay; adamw_corrected = the same with Adam's bias "
      "correction (PyTorch's/HF's AdamW); lamb = LAMB.", choices=optimizer.OPTIMIZERS)
  gradient_accumulation_steps: int = option(
      1, "Batches of train_batch_size summed into one optimizer step.")
  iterations_per_loop: int = option(1000, "Steps per call of the compiled training loop.")
  save_checkpoints_steps: int = option(1000, "How often to save the model checkpoint.")
  keep_checkpoint_max: int = option(5, "Checkpoints kept in output_dir.")
  log_steps: int = option(100, "Steps between progress lines and summaries.")
  seed: Optional[int] = option(
      None, "Random seed (weights, dropout, data order); default: not seeded.")

  def __post_init__(self):
    options.check_choices(self)
    for name in ("gradient_accumulation_steps", "iterations_per_loop", "save_checkpoints_steps",
                 "keep_checkpoint_max", "log_steps", "num_tpu_cores"):
      check_positive(name, getattr(self, name))
    if self.num_gpus is not None and self.num_gpus < 0:
      raise FlagError(f"--num_gpus must be >= 0, got {self.num_gpus}")

  @property
  def strategy_name(self):
    """--use_tpu is Google's spelling of --distribution_strategy=tpu."""
    return "tpu" if self.use_tpu else self.distribution_strategy

  def build_strategy(self):
    return strategy_lib.build_strategy(
        self.strategy_name, num_gpus=self.num_gpus, tpu_name=self.tpu_name or self.master,
        tpu_zone=self.tpu_zone, gcp_project=self.gcp_project)


def check_positive(name, value):
  """FlagError naming --name unless value is a finite number > 0."""
  if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
    raise FlagError(f"--{name} must be positive, got {value}")

