"""The one job driver: the steps the options ask for, in order, Google's step count and warm-up,
and output_dir released however the run ends."""

import dataclasses
from typing import Optional

import pytest

import cli
from training import job as job_lib
from training import output_lock, runtime


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Options(runtime.RuntimeOptions):
  output_dir: str
  do_train: bool = False
  do_eval: bool = False
  do_predict: bool = False
  export_dir: Optional[str] = None
  train_batch_size: int = 32
  learning_rate: float = 5e-5
  warmup_proportion: float = 0.1
  num_warmup_steps: Optional[int] = None


class _Job(job_lib.Job):
  """Records what the driver asks of it; trains nothing."""

  def __init__(self, options):
    super().__init__(options)
    self.calls = []

  def check_inputs(self):
    self.calls.append("check_inputs")

  def train(self):
    self.calls.append("train")
    return self.train_task("the task", self.train_steps(num_examples=1000, epochs=3.0))

  def evaluate(self):
    self.calls.append("evaluate")
    return {"eval_accuracy": 1.0}

  def predict(self):
    self.calls.append("predict")
    return [0.5]

  def export(self):
    self.calls.append("export")
    return self.options.export_dir


@pytest.fixture(name="trained")
def fixture_trained(monkeypatch):
  """The arguments `Runner.train` gets."""
  seen = []
  monkeypatch.setattr(job_lib.runner_lib.Runner, "train",
                      lambda runner, *args, **kwargs: seen.append((args, kwargs)) or {"loss": 1.0})
  return seen


def test_the_requested_steps_run_in_order_after_the_input_checks(tmp_path, trained):
  job = _Job(_Options(output_dir=str(tmp_path), do_predict=True, do_train=True,
                      export_dir="exported"))
  assert job.run() == {"train": {"loss": 1.0}, "predict": [0.5], "export": "exported"}
  assert job.calls == ["check_inputs", "train", "predict", "export"]
  # Google's num_train_steps = int(1000 / 32 * 3.0) = 93 and warm-up int(93 * 0.1) = 9.
  assert trained == [(("the task", 32, 93, 5e-5, 9), {})]
  job.runner.close()


def test_warmup_in_steps_when_the_options_give_steps(tmp_path, trained):
  job = _Job(_Options(output_dir=str(tmp_path), do_train=True, num_warmup_steps=7))
  job.run()
  assert trained[0][0][4] == 7
  job.runner.close()


def test_no_training_step_is_a_flag_error():
  assert job_lib.num_train_steps(64, 32, 0.5) == 1
  with pytest.raises(cli.FlagError, match="10 examples, train_batch_size 32 and 3.0 epochs give "
                                          "no training step"):
    job_lib.num_train_steps(10, 32, 3.0)


def test_run_job_releases_output_dir_when_a_step_fails(tmp_path, trained):
  del trained

  class Failing(_Job):
    def evaluate(self):
      raise cli.FlagError("no dev examples")

  with pytest.raises(cli.FlagError, match="no dev examples"):
    job_lib.run_job(Failing, _Options(output_dir=str(tmp_path), do_eval=True))
  assert not (tmp_path / output_lock.LOCK_NAME).exists()
