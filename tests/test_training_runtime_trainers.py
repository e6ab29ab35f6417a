"""Every runtime option reaches both trainers: run_pretraining's and run_classifier's tasks get
the same strategy, precision, kernels, optimizer, accumulation, checkpoint and logging settings
from the one runner. (What each setting does is tested with the loop, the optimizer and the
model; here, that none is dropped on the way.)"""

import pytest
import tf_keras

from classification import run as classification_run
import modeling
import pretraining
from tests.classifier_jobs import classifier_options
from tests.pretraining_jobs import pretraining_config_file, pretraining_options
from training import loop, runner

# Every RuntimeOptions field away from its default (TPU fields aside: no TPU here).
RUNTIME = dict(distribution_strategy="mirrored", dtype="mixed_bfloat16", use_xla=True,
               kernels="keras", optimizer="lamb", gradient_accumulation_steps=2,
               iterations_per_loop=3, save_checkpoints_steps=4, keep_checkpoint_max=2,
               log_steps=2, seed=5)


@pytest.fixture(name="spy")
def fixture_spy(monkeypatch):
  """Records the Trainer (without training), the seed and the kernels the models are built
  with."""
  seen = {"kernels": []}

  def train(trainer):
    seen["trainer"] = trainer
    return {}

  def recording(build):
    def wrapped(*args, **kwargs):
      seen["kernels"].append(modeling.current_kernels())
      return build(*args, **kwargs)
    return wrapped

  monkeypatch.setattr(loop.Trainer, "train", train)
  monkeypatch.setattr(runner.tf_keras.utils, "set_random_seed",
                      lambda seed: seen.setdefault("seed", seed))
  for name in ("build_pretraining_model", "build_classifier"):
    monkeypatch.setattr(modeling, name, recording(getattr(modeling, name)))
  return seen


def check(seen):
  trainer = seen["trainer"]
  for name in ("gradient_accumulation_steps", "iterations_per_loop", "save_checkpoints_steps",
               "keep_checkpoint_max", "log_steps", "dtype", "use_xla"):
    assert getattr(trainer.config, name) == RUNTIME[name], name
  assert type(trainer.strategy).__name__ == "MirroredStrategy"
  assert type(trainer.optimizer).__name__ == "Lamb"
  assert trainer.model.dtype_policy.name == "mixed_bfloat16"
  assert seen["kernels"] == ["keras"] and seen["seed"] == 5


def test_pretraining_gets_every_runtime_option(spy, tmp_path, pretraining_records):
  data = pretraining_records
  config = pretraining_config_file(tmp_path / "bert_config.json")
  options = pretraining_options(("{},{}".format(*data), config, config), tmp_path / "out",
                                **RUNTIME)
  assert isinstance(options, pretraining.PretrainingOptions)
  pretraining.run(options)
  check(spy)


def test_classifier_gets_every_runtime_option(spy, tmp_path):
  options = classifier_options(tmp_path, num_train_epochs=0.1, **RUNTIME)
  assert isinstance(options, classification_run.ClassifierOptions)
  classification_run.run_classifier(options)
  check(spy)
  assert isinstance(spy["trainer"].model, tf_keras.Model)
