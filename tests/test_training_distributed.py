"""The training loop across processes and devices: a real kill (or SIGTERM) and resume,
MirroredStrategy over two logical CPUs, two-worker MultiWorkerMirroredStrategy (healthy,
SIGTERM to one worker, one worker killed).

Each runs the toy job of tests.toy_job as a subprocess (its own TensorFlow
runtime, device split and TF_CONFIG) under `cli.run`, as our scripts:
`python -m tests.test_training_distributed --output_dir DIR ...` trains it and writes
its losses and weights.
"""

import glob
import json
import os
import re
import signal
import subprocess
import sys
import time

from absl import flags, logging
import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import cli
from tests.paths import REPO
from tests.processes import free_port, signal_after_first_checkpoint, wait_for_success
from tests.tiny_models import model_weights
from tests.toy_job import LossRecorder, toy_example, toy_trainer
from training import evaluation
from training import flags as training_flags
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


@pytest.mark.slow
@pytest.mark.parametrize('signum', [signal.SIGKILL, signal.SIGTERM])
def test_stopped_run_resumes_to_the_same_weights(tmp_path, signum):
  # ~1 s of training after the first save: ample time to kill it there.
  # SIGTERM saves the step it stopped after, between two saves.
  steps = 300
  flags = dict(num_train_steps=steps, save_checkpoints_steps=25,
               log_steps=25, iterations_per_loop=25)
  output_dir = tmp_path / 'run'
  process = subprocess.Popen(
      job_command(output_dir, tmp_path / 'killed.json', **flags), cwd=REPO,
      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
  _, stderr = signal_after_first_checkpoint(process, output_dir, TIMEOUT, signum)
  assert not (tmp_path / 'killed.json').exists(), 'the run was not stopped'
  if signum == signal.SIGTERM:
    assert process.returncode == 143, stderr[-3000:]
    kept = re.fullmatch(r'test_training_distributed: terminated: kept (\S+model\.ckpt-(\d+)); '
                        r'the same command resumes from step \2', stderr.strip().splitlines()[-1])
    assert kept and kept[1] == tf.train.latest_checkpoint(str(output_dir)), stderr[-3000:]
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


@pytest.mark.slow
def test_mirrored_over_two_cpus_matches_one_device(tmp_path, monkeypatch):
  result, log = run_job(tmp_path / 'mirrored', tmp_path / 'mirrored.json',
                        strategy='mirrored', split_cpu=2, num_train_steps=20,
                        log_steps=1)
  assert 'Training with MirroredStrategy over 2 replica(s)' in log
  recorder = LossRecorder(monkeypatch)
  one = one_device_run(tmp_path / 'one', 20, log_steps=1)
  one.train()
  # Same global batch of 16 (2 x 8 vs 1 x 16), float32 sums in another order.
  np.testing.assert_allclose(result['losses'], recorder.losses, rtol=1e-5)
  # The update is the one of the global batch's mean loss: gradients summed
  # over replicas would double the step, a per-replica mean weighted wrongly
  # would tilt it; either moves the weights after the first step.
  assert_same_weights(result['weights'], model_weights(one.model), rtol=1e-5, atol=1e-6)
  # evaluation.predict gives the replicas' outputs back in dataset order.
  np.testing.assert_allclose(result['predictions'],
                             result['direct_predictions'], rtol=1e-5,
                             atol=1e-6)



def plain_sgd():
  """SGD at a constant rate: its step is proportional to the gradient, where
  Adam's is nearly invariant to the gradient's scale (a sum over replicas
  instead of a mean trains the same weights under Adam)."""
  return tf_keras.optimizers.SGD(0.05)


@pytest.mark.slow
def test_mirrored_update_is_the_mean_over_the_global_batch(tmp_path):
  result, _ = run_job(tmp_path / 'mirrored', tmp_path / 'mirrored.json',
                      strategy='mirrored', split_cpu=2, num_train_steps=2,
                      log_steps=1, sgd=True)
  one = one_device_run(tmp_path / 'one', 2, log_steps=1, optimizer_fn=plain_sgd)
  one.train()
  assert_same_weights(result['weights'], model_weights(one.model), rtol=1e-5, atol=1e-6)


def start_two_workers(tmp_path, output_dir, result_name=None, **flags):
  """Starts the toy job on a two-worker cluster on localhost (stderr piped, every
  TensorFlow log level shown); returns the processes, chief first."""
  cluster = {'worker': [f'localhost:{free_port()}', f'localhost:{free_port()}']}
  processes = []
  for task_id in range(2):
    temp_dir = tmp_path / f'tmp{task_id}'
    temp_dir.mkdir(exist_ok=True)
    env = dict(os.environ, TMPDIR=str(temp_dir), TF_CONFIG=json.dumps(
        {'cluster': cluster, 'task': {'type': 'worker', 'index': task_id}}))
    env.pop('TF_CPP_MIN_LOG_LEVEL', None)
    result = tmp_path / f'{result_name}{task_id}.json' if result_name else ''
    processes.append(subprocess.Popen(
        job_command(output_dir, result, strategy='multi_worker_mirrored', **flags),
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True))
  return processes


def error_level_lines(log):
  return re.findall(r'^E\d{4} .*', log, re.M)


@pytest.mark.slow
def test_two_workers_train_the_same_weights_and_only_the_chief_writes(
    tmp_path, monkeypatch):
  output_dir = tmp_path / 'run'
  temp_dirs = [tmp_path / f'tmp{task_id}' for task_id in range(2)]
  # The other worker ends well after the chief: the chief waits for it, so no
  # worker loses the coordination service (an error-level line).
  processes = start_two_workers(tmp_path, output_dir, 'worker', num_train_steps=20,
                                log_steps=5, save_checkpoints_steps=10, linger_seconds=8)
  logs = wait_for_success(processes, TIMEOUT)
  for log in logs:
    assert not error_level_lines(log), log[-3000:]
  chief, worker = (json.load(open(tmp_path / f'worker{i}.json'))
                   for i in range(2))
  assert chief['is_chief'] and not worker['is_chief']
  assert chief['step'] == worker['step'] == 20
  assert_same_weights(worker['weights'], chief['weights'], rtol=0, atol=1e-6)
  # Each worker's shard holds half of each global batch of 16: the same
  # examples per step as one device.
  recorder = LossRecorder(monkeypatch)
  one = one_device_run(tmp_path / 'one', 20, log_steps=5)
  one.train()
  np.testing.assert_allclose(chief['losses'], recorder.losses, rtol=1e-5)
  np.testing.assert_allclose(worker['losses'], recorder.losses, rtol=1e-5)
  # And the same weights as one device: the all-reduce averages the global batch.
  assert_same_weights(chief['weights'], model_weights(one.model), rtol=1e-5, atol=1e-6)
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


def wait_for_all(processes, timeout):
  """Waits for every process (stderr piped); returns their logs (killing any left at the end)."""
  try:
    return [p.communicate(timeout=timeout)[1] for p in processes]
  finally:
    for p in processes:
      p.kill()
      p.wait()


def signal_one_worker_after_first_checkpoint(processes, output_dir, signum, task_id):
  deadline = time.time() + TIMEOUT
  while not (output_dir / 'checkpoint').exists():
    assert all(p.poll() is None for p in processes), 'a worker ended before the first save'
    assert time.time() < deadline, 'no checkpoint in time'
    time.sleep(0.01)
  time.sleep(0.5)
  processes[task_id].send_signal(signum)
  return time.time()


def assert_rerun_resumes_from(tmp_path, output_dir, step):
  """Reruns both workers to `step` + 5; asserts each restored checkpoint `step`."""
  logs = wait_for_success(start_two_workers(
      tmp_path, output_dir, num_train_steps=step + 5, log_steps=5,
      save_checkpoints_steps=1000), TIMEOUT)
  for log in logs:
    assert f'Restored checkpoint {output_dir}/model.ckpt-{step} at step {step}' in log, log[-3000:]
  assert tf.train.latest_checkpoint(str(output_dir)).endswith(f'model.ckpt-{step + 5}')


# Endless jobs (stopped by the signal) that save early, then every 100 steps.
ENDLESS = dict(num_train_steps=10**7, save_checkpoints_steps=100, log_steps=100,
               iterations_per_loop=1000)


@pytest.mark.slow
def test_sigterm_to_one_worker_stops_every_worker_at_the_same_step(tmp_path):
  output_dir = tmp_path / 'run'
  processes = start_two_workers(tmp_path, output_dir, **ENDLESS)
  sent = signal_one_worker_after_first_checkpoint(processes, output_dir, signal.SIGTERM, 1)
  logs = wait_for_all(processes, TIMEOUT)
  took = time.time() - sent
  # Each worker's stop line: on a loaded host TensorFlow's teardown may log after it
  # (README "Preemption").
  lines = [next((l for l in reversed(log.splitlines()) if ': terminated: ' in l), log[-3000:])
           for log in logs]
  for process, log in zip(processes, logs):
    assert process.returncode == 143, log[-3000:]
    # No error-level line until the stop (the teardown after it: see README "Preemption").
    assert 'Traceback' not in log and not error_level_lines(log.split(': terminated: ')[0]), \
        log[-3000:]
  # Both name the checkpoint of the same step, which the chief wrote (the step in
  # flight finished, not the next save: every 100 steps).
  assert lines[0] == lines[1], lines
  kept = re.fullmatch(r'test_training_distributed: terminated: kept (\S+model\.ckpt-(\d+)); '
                      r'the same command resumes from step \2', lines[0])
  assert kept and kept[1] == tf.train.latest_checkpoint(str(output_dir)), lines[0]
  assert took < 60, took


@pytest.mark.slow
def test_a_killed_worker_ends_the_other_with_one_line_and_a_rerun_resumes(tmp_path):
  output_dir = tmp_path / 'run'
  processes = start_two_workers(tmp_path, output_dir, **ENDLESS)
  sent = signal_one_worker_after_first_checkpoint(processes, output_dir, signal.SIGKILL, 1)
  chief_log = wait_for_all(processes, TIMEOUT)[0]
  took = time.time() - sent
  assert processes[0].returncode == 1, chief_log[-3000:]
  assert 'Traceback' not in chief_log, chief_log[-3000:]
  latest = tf.train.latest_checkpoint(str(output_dir))
  step = int(latest.rsplit('-', 1)[1])
  assert re.fullmatch(
      r'test_training_distributed: error: lost worker 1 \(localhost:\d+\) of the cluster '
      r'\(killed, crashed or unreachable\): training stopped; kept ' + re.escape(latest) +
      f'; the same command on every worker resumes from step {step}',
      chief_log.strip().splitlines()[-1]), chief_log[-2000:]
  # The coordination service's heartbeat timeout (a killed chief: its closed connections).
  assert took < 60, took
  assert_rerun_resumes_from(tmp_path, output_dir, step)


def main(argv):
  """Trains the toy job (for the subprocess tests), under `cli.run` as our scripts."""
  del argv
  args = FLAGS
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
      log_steps=args.log_steps, iterations_per_loop=args.iterations_per_loop,
      optimizer_fn=plain_sgd if args.sgd else None)
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
  if not strategy_lib.is_chief(strategy):
    time.sleep(args.linger_seconds)


FLAGS = flags.FLAGS

if __name__ == '__main__':
  flags.DEFINE_string('output_dir', None, 'Checkpoints and summaries.', required=True)
  flags.DEFINE_string('strategy', 'one_device', 'tf.distribute strategy.')
  flags.DEFINE_integer('split_cpu', 0, 'Logical CPU devices to split the CPU into.')
  flags.DEFINE_integer('num_train_steps', 20, 'Optimizer steps.')
  flags.DEFINE_integer('batch_size', 16, 'Global batch size.')
  flags.DEFINE_integer('save_checkpoints_steps', 1000, 'Steps between checkpoints.')
  flags.DEFINE_integer('log_steps', 5, 'Steps between progress lines.')
  flags.DEFINE_integer('iterations_per_loop', 1000, 'Steps per call of the compiled loop.')
  flags.DEFINE_integer('seed', 0, 'Random seed.')
  flags.DEFINE_string('result', None, 'json file for losses and weights.')
  flags.DEFINE_bool('sgd', False, 'Plain SGD instead of AdamW (see plain_sgd).')
  flags.DEFINE_float('linger_seconds', 0, 'A non-chief worker waits this long before it ends.')
  cli.run(main, interrupted_note=training_flags.interrupted_note,
          terminated_note=training_flags.terminated_note)
