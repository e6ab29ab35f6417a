"""The training loop across processes and devices: a real kill and resume,
MirroredStrategy over two logical CPUs, two-worker MultiWorkerMirroredStrategy.

Each runs the toy job of tests.toy_job as a subprocess (its own TensorFlow
runtime, device split and TF_CONFIG): `python -m tests.test_training_distributed
--output_dir DIR ...` trains it and writes its losses and weights.
"""

import argparse
import glob
import json
import os
import re
import subprocess
import sys

from absl import logging
import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from tests.paths import REPO
from tests.processes import free_port, signal_after_first_checkpoint, wait_for_success
from tests.tiny_models import model_weights
from tests.toy_job import LossRecorder, toy_example, toy_trainer
from training import evaluation
from training import loop
from training import strategy as strategy_lib

pytestmark = pytest.mark.multiprocess
TIMEOUT = 240


def job_command(output_dir, result, **flags):
  command = [sys.executable, '-m', 'tests.test_training_distributed',
             f'--output_dir={output_dir}', f'--result={result}']
  return command + [f'--{name}={value}' for name, value in flags.items()]


def run_job(output_dir, result, env=None, **flags):
  """Runs the toy job to completion; returns (its result dict, its log)."""
  process = subprocess.run(job_command(output_dir, result, **flags), cwd=REPO,
                           env=env, capture_output=True, text=True,
                           timeout=TIMEOUT, check=False)
  assert process.returncode == 0, process.stderr[-5000:]
  with open(result) as f:
    return json.load(f), process.stderr


def one_device_run(output_dir, num_train_steps, **config):
  """The same toy job in this process, on one device, seed 0."""
  tf_keras.utils.set_random_seed(0)
  return toy_trainer(strategy_lib.build_strategy('one_device'),
                     output_dir, num_train_steps, **config)


def assert_same_weights(got, want, rtol, atol):
  assert set(got) == set(want)
  for name in want:
    np.testing.assert_allclose(np.array(got[name]), np.array(want[name]),
                               rtol=rtol, atol=atol, err_msg=name)


def test_killed_run_resumes_to_the_same_weights(tmp_path):
  # ~1 s of training after the first save: ample time to kill it there.
  steps = 300
  flags = dict(num_train_steps=steps, save_checkpoints_steps=25,
               log_steps=25, iterations_per_loop=25)
  output_dir = tmp_path / 'run'
  process = subprocess.Popen(
      job_command(output_dir, tmp_path / 'killed.json', **flags), cwd=REPO,
      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  signal_after_first_checkpoint(process, output_dir, TIMEOUT)
  assert not (tmp_path / 'killed.json').exists(), 'the run was not killed'
  result, log = run_job(output_dir, tmp_path / 'resumed.json', **flags)
  restored = re.search(r'Restored checkpoint \S+model.ckpt-(\d+) at step (\d+)',
                       log)
  assert restored, log[-3000:]
  restored_step = int(restored.group(2))
  assert 0 < restored_step < steps
  assert restored.group(1) == restored.group(2)
  assert result['step'] == steps
  assert os.path.exists(output_dir / f'model.ckpt-{steps}.index')
  # Optimizer slots, step and input position came back: the resumed run
  # ends where an uninterrupted one does.
  uninterrupted = one_device_run(tmp_path / 'whole', steps,
                                 **{k: v for k, v in flags.items()
                                    if k != 'num_train_steps'})
  uninterrupted.train()
  assert_same_weights(result['weights'], model_weights(uninterrupted.model),
                      rtol=1e-5, atol=1e-6)


def test_mirrored_over_two_cpus_matches_one_device(tmp_path, monkeypatch):
  result, log = run_job(tmp_path / 'mirrored', tmp_path / 'mirrored.json',
                        strategy='mirrored', split_cpu=2, num_train_steps=20,
                        log_steps=1)
  assert 'Training with MirroredStrategy over 2 replica(s)' in log
  recorder = LossRecorder(monkeypatch)
  one_device_run(tmp_path / 'one', 20, log_steps=1).train()
  # Same global batch of 16 (2 x 8 vs 1 x 16), float32 sums in another order.
  np.testing.assert_allclose(result['losses'], recorder.losses, rtol=1e-5)
  # evaluation.predict gives the replicas' outputs back in dataset order.
  np.testing.assert_allclose(result['predictions'],
                             result['direct_predictions'], rtol=1e-5,
                             atol=1e-6)



def test_two_workers_train_the_same_weights_and_only_the_chief_writes(
    tmp_path, monkeypatch):
  cluster = {'worker': [f'localhost:{free_port()}', f'localhost:{free_port()}']}
  output_dir = tmp_path / 'run'
  processes, temp_dirs = [], []
  for task_id in range(2):
    temp_dir = tmp_path / f'tmp{task_id}'
    temp_dir.mkdir()
    temp_dirs.append(temp_dir)
    env = dict(os.environ, TMPDIR=str(temp_dir), TF_CONFIG=json.dumps(
        {'cluster': cluster, 'task': {'type': 'worker', 'index': task_id}}))
    processes.append(subprocess.Popen(
        job_command(output_dir, tmp_path / f'worker{task_id}.json',
                    strategy='multi_worker_mirrored', num_train_steps=20,
                    log_steps=5, save_checkpoints_steps=10),
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True))
  wait_for_success(processes, TIMEOUT)
  chief, worker = (json.load(open(tmp_path / f'worker{i}.json'))
                   for i in range(2))
  assert chief['is_chief'] and not worker['is_chief']
  assert chief['step'] == worker['step'] == 20
  assert_same_weights(worker['weights'], chief['weights'], rtol=0, atol=1e-6)
  # Each worker's shard holds half of each global batch of 16: the same
  # examples per step as one device.
  recorder = LossRecorder(monkeypatch)
  one_device_run(tmp_path / 'one', 20, log_steps=5).train()
  np.testing.assert_allclose(chief['losses'], recorder.losses, rtol=1e-5)
  np.testing.assert_allclose(worker['losses'], recorder.losses, rtol=1e-5)
  # Only the chief wrote: its checkpoints and its (pid-named) event file; the
  # other worker's temporary files are gone.
  assert sorted(os.listdir(output_dir)) == sorted(
      ['checkpoint', 'model.ckpt-10.index', 'model.ckpt-10.data-00000-of-00001',
       'model.ckpt-20.index', 'model.ckpt-20.data-00000-of-00001'] +
      [os.path.basename(p) for p in glob.glob(
          str(output_dir / 'events.out.tfevents.*'))])
  events = glob.glob(str(output_dir / 'events.out.tfevents.*'))
  assert len(events) == 1 and f".{chief['pid']}." in events[0], events
  assert os.listdir(temp_dirs[1]) == []


def main():
  """Trains the toy job (for the subprocess tests)."""
  parser = argparse.ArgumentParser()
  parser.add_argument('--output_dir', required=True)
  parser.add_argument('--strategy', default='one_device')
  parser.add_argument('--split_cpu', type=int, default=0)
  parser.add_argument('--num_train_steps', type=int, default=20)
  parser.add_argument('--batch_size', type=int, default=16)
  parser.add_argument('--save_checkpoints_steps', type=int, default=1000)
  parser.add_argument('--log_steps', type=int, default=5)
  parser.add_argument('--iterations_per_loop', type=int, default=1000)
  parser.add_argument('--seed', type=int, default=0)
  parser.add_argument('--result', help='json file for losses and weights')
  args = parser.parse_args()
  logging.set_verbosity(logging.INFO)
  if args.split_cpu:
    strategy_lib.split_cpu(args.split_cpu)
  strategy = strategy_lib.build_strategy(args.strategy)
  tf_keras.utils.set_random_seed(args.seed)
  losses = []
  original = loop.summaries.log_progress

  def log_progress(step, num_steps, scalars):
    losses.append(scalars['loss'])
    original(step, num_steps, scalars)
  loop.summaries.log_progress = log_progress
  trainer = toy_trainer(
      strategy, args.output_dir, args.num_train_steps,
      batch_size=args.batch_size,
      save_checkpoints_steps=args.save_checkpoints_steps,
      log_steps=args.log_steps, iterations_per_loop=args.iterations_per_loop)
  trainer.train()
  if args.result:
    # 36 examples in per-replica batches of 8: the last step is uneven.
    predictions = np.concatenate(list(evaluation.predict(
        strategy, trainer.model,
        lambda context: tf.data.Dataset.range(36).map(toy_example).batch(8))))
    direct = trainer.model(
        {'x': np.stack([toy_example(i)['x'].numpy() for i in range(36)])})
    with open(args.result, 'w') as f:
      json.dump({'losses': losses,
                 'predictions': predictions.tolist(),
                 'direct_predictions': direct.numpy().tolist(),
                 'step': trainer.global_step,
                 'is_chief': strategy_lib.is_chief(strategy),
                 'pid': os.getpid(),
                 'weights': {k: v.tolist()
                             for k, v in model_weights(trainer.model).items()}}, f)


if __name__ == '__main__':
  main()
