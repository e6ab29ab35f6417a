"""The training loop across processes and devices: a real kill and resume,
MirroredStrategy over two logical CPUs, two-worker MultiWorkerMirroredStrategy.

Each runs the toy job of test_training_loop as a subprocess (its own
TensorFlow runtime, device split and TF_CONFIG).
"""

import glob
import json
import os
import re
import subprocess
import sys

import numpy as np
from tests.processes import free_port, sigkill_after_first_checkpoint, wait_for_success
from tests import test_training_loop as toy
from training import strategy as strategy_lib

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT = 240


def job_command(output_dir, result, **flags):
  command = [sys.executable, '-m', 'tests.test_training_loop',
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
  toy.tf_keras.utils.set_random_seed(0)
  return toy.make_trainer(strategy_lib.build_strategy('one_device'),
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
  sigkill_after_first_checkpoint(process, output_dir, TIMEOUT)
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
  assert_same_weights(result['weights'], toy.weights(uninterrupted.model),
                      rtol=1e-5, atol=1e-6)


def test_mirrored_over_two_cpus_matches_one_device(tmp_path, monkeypatch):
  result, log = run_job(tmp_path / 'mirrored', tmp_path / 'mirrored.json',
                        strategy='mirrored', split_cpu=2, num_train_steps=20,
                        log_steps=1)
  assert 'Training with MirroredStrategy over 2 replica(s)' in log
  recorder = toy.LossRecorder(monkeypatch)
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
  recorder = toy.LossRecorder(monkeypatch)
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
