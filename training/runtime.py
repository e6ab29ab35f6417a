"""`RuntimeOptions`: where and how a job runs, the same for every trainer.

Every trainer's options dataclass extends it (keyword-only fields), so the
strategy, precision, kernels, optimizer, accumulation, checkpoint and logging
settings are defined once, exposed as flags once (`training.flags`) and
honoured by one runner (`training.runner`).
"""

import dataclasses
import math
from typing import Optional

from cli import FlagError
from modeling.kernels import KERNELS  # the kernel family, which the runner sets for the job
from training import optimizer, precision
from training import strategy as strategy_lib


@dataclasses.dataclass(frozen=True, kw_only=True)
class RuntimeOptions:
  """Google's TPU flags and our runtime flags; names and defaults as Google's where it has them.

  gradient_accumulation_steps: batches of train_batch_size summed into one
    optimizer step. iterations_per_loop: steps per call of the compiled loop.
  """
  use_tpu: bool = False
  tpu_name: Optional[str] = None
  tpu_zone: Optional[str] = None
  gcp_project: Optional[str] = None
  master: Optional[str] = None
  num_tpu_cores: int = 8
  distribution_strategy: str = "one_device"
  num_gpus: Optional[int] = None
  dtype: str = "float32"
  use_xla: bool = False
  kernels: str = "auto"
  optimizer: str = "adamw"
  gradient_accumulation_steps: int = 1
  iterations_per_loop: int = 1000
  save_checkpoints_steps: int = 1000
  keep_checkpoint_max: int = 5
  log_steps: int = 100
  seed: Optional[int] = None

  def __post_init__(self):
    choices = {"distribution_strategy": strategy_lib.STRATEGIES, "dtype": precision.DTYPES,
               "kernels": KERNELS, "optimizer": optimizer.OPTIMIZERS}
    for name, allowed in choices.items():
      if getattr(self, name) not in allowed:
        raise FlagError(f"--{name} must be one of {', '.join(allowed)}, "
                        f"got {getattr(self, name)!r}")
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

