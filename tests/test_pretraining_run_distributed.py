"""run_pretraining across processes and devices: a SIGKILL and resume ends where an
uninterrupted run does; MirroredStrategy over two logical CPUs equals one device; two
MultiWorkerMirroredStrategy workers on localhost train the same weights, only the chief writes.

`python -m tests.test_pretraining_run_distributed [--split_cpu=N]
[--dump_weights=F] <run_pretraining flags>` runs run_pretraining.py after
splitting the CPU into N logical devices, and saves the trained weights.
"""

import glob
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

from absl import app, flags
import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import modeling
import pretraining
import run_pretraining
from tests.paths import REPO
from tests.pretraining_jobs import PRED, SEQ, pretraining_config_file
from tests.processes import free_port, signal_after_first_checkpoint, wait_for_success
from tests.tiny_models import checkpoint_weights
from training import loop, summaries
from training import strategy as strategy_lib

pytestmark = [pytest.mark.slow, pytest.mark.multiprocess]
TIMEOUT = 300


def make_job(tmp_path, files):
  """(`files`, config file without dropout, init checkpoint): runs that
  start from the same weights and draw no random numbers compare exactly."""
  config_file = pretraining_config_file(tmp_path / "bert_config.json", dropout=0.0)
  tf_keras.utils.set_random_seed(1)
  model = modeling.build_pretraining_model(modeling.BertConfig.from_json_file(config_file),
                                           seq_length=SEQ, max_predictions_per_seq=PRED)
  init = modeling.new_checkpoint(model).save(str(tmp_path / "init" / "ckpt"))
  return files, config_file, init


def job_flags(input_file, config_file, init, output_dir, **extra):
  values = dict(bert_config_file=config_file, input_file=input_file,
                output_dir=str(output_dir), init_checkpoint=init, max_seq_length=SEQ,
                max_predictions_per_seq=PRED, do_train=True, train_batch_size=16,
                learning_rate=1e-3, num_warmup_steps=2, seed=1)
  values.update(extra)
  return values


def command(values, module=False):
  head = ["-m", "tests.test_pretraining_run_distributed"] if module else ["run_pretraining.py"]
  return [sys.executable, *head] + [f"--{k}={v}" for k, v in values.items()]


def test_killed_run_resumes_and_ends_where_an_uninterrupted_one_does(
    tmp_path, pretraining_records):
  files, config_file, init = make_job(tmp_path, pretraining_records)
  steps = 60
  values = job_flags(",".join(files), config_file, init, tmp_path / "run",
                     num_train_steps=steps, save_checkpoints_steps=10, iterations_per_loop=10,
                     log_steps=10)
  output_dir = tmp_path / "run"
  missing = subprocess.run(command(dict(values, input_file=tmp_path / "none*.tfrecord")),
                           cwd=REPO, capture_output=True, text=True, timeout=TIMEOUT,
                           check=False)
  assert missing.returncode == 1
  assert "run_pretraining: error: --input_file " in missing.stderr
  assert "none*.tfrecord' matches no file" in missing.stderr
  process = subprocess.Popen(command(values), cwd=REPO, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
  signal_after_first_checkpoint(process, output_dir, TIMEOUT)
  assert not (output_dir / f"model.ckpt-{steps}.index").exists(), "the run was not killed"
  resumed = subprocess.run(command(values), cwd=REPO, capture_output=True, text=True,
                           timeout=TIMEOUT, check=False)
  assert resumed.returncode == 0, resumed.stderr[-5000:]
  restored = re.search(r"Restored checkpoint \S+model.ckpt-(\d+) at step \1", resumed.stderr)
  assert restored and 0 < int(restored.group(1)) < steps, resumed.stderr[-3000:]
  assert "Warm start" not in resumed.stderr  # init_checkpoint only without a checkpoint
  assert tf.train.latest_checkpoint(str(output_dir)).endswith(f"model.ckpt-{steps}")
  # Weights, Adam slots, step and input position came back: the same end.
  pretraining.run(pretraining.PretrainingOptions(**job_flags(
      ",".join(files), config_file, init, tmp_path / "whole", num_train_steps=steps,
      save_checkpoints_steps=steps, iterations_per_loop=10, log_steps=10)))
  got, want = checkpoint_weights(output_dir), checkpoint_weights(tmp_path / "whole")
  assert set(got) == set(want) and len(got) == 46
  for key in want:
    np.testing.assert_allclose(got[key], want[key], rtol=1e-4, atol=1e-6, err_msg=key)


def test_a_second_run_on_the_output_dir_is_refused_and_ctrl_c_names_the_checkpoint(
    tmp_path, pretraining_records):
  files, config_file, init = make_job(tmp_path, pretraining_records)
  output_dir = tmp_path / "run"
  values = job_flags(",".join(files), config_file, init, output_dir, num_train_steps=100000,
                     save_checkpoints_steps=10, iterations_per_loop=10, log_steps=10)
  with open(tmp_path / "stderr.txt", "w", encoding="utf-8") as stderr:
    process = subprocess.Popen(command(values), cwd=REPO, stdout=subprocess.DEVNULL,
                               stderr=stderr)
    try:
      deadline = time.time() + TIMEOUT
      while not (output_dir / ".run.lock").exists():
        assert process.poll() is None and time.time() < deadline, "no lock taken"
        time.sleep(0.01)
      second = subprocess.run(command(values), cwd=REPO, capture_output=True, text=True,
                              timeout=TIMEOUT, check=False)
    finally:
      signal_after_first_checkpoint(process, output_dir, TIMEOUT, signal.SIGINT)
  assert second.returncode == 1 and second.stderr.strip().splitlines()[-1] == (
      f"run_pretraining: error: --output_dir {output_dir} is in use by process {process.pid} "
      f"on {socket.gethostname()} (lock file {output_dir / '.run.lock'}): wait for it to end "
      "or use another output_dir")
  log = (tmp_path / "stderr.txt").read_text(encoding="utf-8")
  assert process.returncode == 130 and "Traceback" not in log, log[-3000:]
  note = re.fullmatch(r"run_pretraining: interrupted; kept (\S+model\.ckpt-(\d+)): the same "
                      r"command resumes from step \2", log.strip().splitlines()[-1])
  assert note and note[1] == tf.train.latest_checkpoint(str(output_dir)), log[-1000:]
  assert not (output_dir / ".run.lock").exists()


def uniform_weight_records(files, path):
  """The records whose PRED slots are all real predictions.

  Then the masked-LM loss of a per-replica batch (a weighted mean over its
  slots) averages over replicas to the global batch's.
  """
  with tf.io.TFRecordWriter(str(path)) as writer:
    for record in tf.data.TFRecordDataset(files).as_numpy_iterator():
      example = tf.train.Example.FromString(record)
      if sum(example.features.feature["masked_lm_weights"].float_list.value) == PRED:
        writer.write(record)
  return str(path)


def test_mirrored_over_two_cpus_matches_one_device(tmp_path, pretraining_records):
  files, config_file, init = make_job(tmp_path, pretraining_records)
  input_file = uniform_weight_records(files, tmp_path / "uniform.tfrecord")
  steps = 8
  values = job_flags(input_file, config_file, init, tmp_path / "mirrored",
                     num_train_steps=steps, log_steps=1, distribution_strategy="mirrored")
  process = subprocess.run(command(dict(values, split_cpu=2), module=True), cwd=REPO,
                           capture_output=True, text=True, timeout=TIMEOUT, check=False)
  assert process.returncode == 0, process.stderr[-5000:]
  assert "Training with MirroredStrategy over 2 replica(s)" in process.stderr
  pretraining.run(pretraining.PretrainingOptions(**dict(values, output_dir=str(tmp_path / "one"),
                                               distribution_strategy="one_device")))
  mirrored = summaries.read_scalars(str(tmp_path / "mirrored"))["loss"]
  one = summaries.read_scalars(str(tmp_path / "one"))["loss"]
  assert sorted(mirrored) == sorted(one) == list(range(1, steps + 1))
  # The same 16 examples a step (2 x 8 vs 16): only float32 sums in another order.
  np.testing.assert_allclose([mirrored[s] for s in one], list(one.values()), rtol=1e-5)



def test_two_workers_train_the_same_weights_and_only_the_chief_writes(
    tmp_path, pretraining_records):
  files, config_file, init = make_job(tmp_path, pretraining_records)
  cluster = {"worker": [f"localhost:{free_port()}", f"localhost:{free_port()}"]}
  output_dir = tmp_path / "run"
  processes = []
  for task_id in range(2):
    temp_dir = tmp_path / f"tmp{task_id}"
    temp_dir.mkdir()
    env = dict(os.environ, TMPDIR=str(temp_dir), TF_CONFIG=json.dumps(
        {"cluster": cluster, "task": {"type": "worker", "index": task_id}}))
    values = job_flags(",".join(files), config_file, init, output_dir, num_train_steps=10,
                       save_checkpoints_steps=5, log_steps=5,
                       distribution_strategy="multi_worker_mirrored",
                       dump_weights=tmp_path / f"worker{task_id}.npz")
    processes.append(subprocess.Popen(command(values, module=True), cwd=REPO, env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                      text=True))
  wait_for_success(processes, TIMEOUT)
  chief, worker = (np.load(tmp_path / f"worker{i}.npz") for i in range(2))
  assert len(chief.files) == len(worker.files) == 46
  for name in chief.files:
    np.testing.assert_allclose(worker[name], chief[name], rtol=0, atol=1e-6, err_msg=name)
  # One set of checkpoints and one summaries file, the chief's; each worker
  # read one of the two files (file-level sharding).
  assert tf.train.latest_checkpoint(str(output_dir)).endswith("model.ckpt-10")
  assert len(glob.glob(str(output_dir / "events.out.tfevents.*"))) == 1
  np.testing.assert_allclose(checkpoint_weights(output_dir)[
      "bert_weights/bert.Spooler.Sdense.Skernel/.ATTRIBUTES/VARIABLE_VALUE"],
      chief[[n for n in chief.files if "pooler" in n and "kernel" in n][0]], atol=1e-6)
  for i in range(2):
    assert not os.listdir(tmp_path / f"tmp{i}"), f"worker {i} left temporary files"


def main(argv):
  if FLAGS.split_cpu:
    strategy_lib.split_cpu(FLAGS.split_cpu)
  if FLAGS.dump_weights:
    train = loop.Trainer.train

    def train_and_dump(self):
      scalars = train(self)
      np.savez(FLAGS.dump_weights, **{v.name: v.numpy() for v in self.model.weights})
      return scalars
    loop.Trainer.train = train_and_dump
  return run_pretraining.main(argv)


FLAGS = flags.FLAGS

if __name__ == "__main__":
  flags.DEFINE_integer("split_cpu", 0, "Logical CPU devices to split the CPU into.")
  flags.DEFINE_string("dump_weights", None, ".npz file for the trained weights.")
  app.run(lambda argv: sys.exit(main(argv)))
