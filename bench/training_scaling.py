"""How run_pretraining.py's throughput changes with replicas and workers, and whether the losses agree.

The same job, run as users run it (a fresh `run_pretraining.py` process per run;
for two workers, two processes on localhost with TF_CONFIG), four ways:
  one_device   1 replica, the default strategy;
  mirrored2    MirroredStrategy over 2 logical CPU devices (`strategy.split_cpu`);
  workers1     MultiWorkerMirroredStrategy, a cluster of 1 worker;
  workers2     MultiWorkerMirroredStrategy, 2 worker processes.
Every run has the same global batch (--batch_size), starts from the same
initial checkpoint and reads the same records (real text: --corpus through
create_pretraining_data, 4 shards), with the same --seed. Per run: examples/s
(the trainer's own summary, median over the log windows after the first,
which holds tracing), wall and CPU seconds and peak RSS of the process tree,
and the loss at each log step against one_device's.

What should agree: one_device, mirrored2 and workers1 feed the same examples
to each step (2 replicas take the first and second half of the same 32), so
their losses differ only by float32 sums in another order and by the masked-LM
loss being a weighted mean per replica, averaged over replicas (not over the
global batch). workers2 reads other examples: each worker reads its own half
of the shards, so its loss agrees with one_device's only statistically. At the
default learning rate (5e-4 after one log window of warm-up) BERT-mini's loss
reaches its plateau by step 15, where another order of examples can make one
window's loss jump (a trajectory at the edge of stability, not a wrong
update: the distributed tests check that two workers fed the same examples
train one device's weights); compare workers2's curve at --learning_rate=1e-4,
where it stays within 1% of one_device's. Dropout is off by default (--dropout) so that no run draws
random numbers the others do not.

On a host with 2 cores, the 2 replicas and the 2 workers share the cores one
replica already uses: this measures the overhead of the strategies (all-reduce,
per-replica batches, a second process), not a speed-up.

  python bench/training_scaling.py [--runs=one_device,mirrored2,workers1,workers2] \\
      [--preset=mini] [--steps=40] [--batch_size=32]
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
# Our scripts' TensorFlow settings (oneDNN), for this process and, through the environment,
# the trainers it starts.
import cli  # pylint: disable=unused-import,wrong-import-position

from absl import app, flags  # pylint: disable=wrong-import-position

from child_env import child_env  # pylint: disable=wrong-import-position  # bench/
from process_memory import measure  # pylint: disable=wrong-import-position  # bench/

def define_flags():
  """The driver's flags (not in a child process: run_pretraining.py defines some of the same
  names there)."""
  flags.DEFINE_string("corpus", os.path.join(REPO, "..", "shared", "data", "corpus",
                                             "gutenberg_heldout.txt"), "Text to make records of.")
  flags.DEFINE_string("vocab_file", os.path.join(REPO, "..", "shared", "fixtures",
                                                 "google_bert_tiny", "vocab.txt"), "Vocabulary.")
  flags.DEFINE_integer("dupe_factor", 2, "dupe_factor of the records.")
  flags.DEFINE_string("preset", "mini", "modeling.BertConfig preset of the model.")
  flags.DEFINE_float("dropout", 0.0, "Hidden and attention dropout of the model.")
  flags.DEFINE_integer("seq_length", 128, "max_seq_length.")
  flags.DEFINE_integer("batch_size", 32, "Global batch (every run).")
  flags.DEFINE_integer("steps", 40, "Training steps per run.")
  flags.DEFINE_integer("log_steps", 5, "Steps per log window (and per loss point).")
  flags.DEFINE_float("learning_rate", 5e-4, "Peak learning rate (warm-up: one log window).")
  flags.DEFINE_list("runs", ["one_device", "mirrored2", "workers1", "workers2"], "Runs, in order.")
  flags.DEFINE_integer("threads", 0, "TensorFlow threads per process (0: its default).")
  flags.DEFINE_string("work_dir", None, "Where records and outputs go (default: a temporary "
                      "folder, deleted at the end).")


FLAGS = flags.FLAGS

PREDICTIONS = 20
_REPLICAS_CHILD, _CLUSTER_CHILD = "--replicas_child", "--cluster_child"  # argv[1] of a child run


def replicas_child(argv):
  """`training_scaling.py --replicas_child N <run_pretraining flags>`: run_pretraining.py over
  N logical CPU devices (its flags alone cannot split the CPU)."""
  import runpy  # pylint: disable=import-outside-toplevel
  from training import strategy  # pylint: disable=import-outside-toplevel
  strategy.split_cpu(int(argv[2]))
  script = os.path.join(REPO, "run_pretraining.py")
  sys.argv = [script, *argv[3:]]
  runpy.run_path(script, run_name="__main__")


def cluster_child(argv):
  """`training_scaling.py --cluster_child N <run_pretraining flags>`: N run_pretraining.py
  workers on localhost (TF_CONFIG); exits 1 if any failed, with its log's tail."""
  from tests.processes import free_port  # pylint: disable=import-outside-toplevel
  workers = int(argv[2])
  cluster = {"worker": [f"localhost:{free_port()}" for _ in range(workers)]}
  logs = [tempfile.TemporaryFile("w+") for _ in range(workers)]
  processes = [subprocess.Popen(  # pylint: disable=consider-using-with
      [sys.executable, os.path.join(REPO, "run_pretraining.py"), *argv[3:]], cwd=REPO,
      stdout=subprocess.DEVNULL, stderr=log,
      env=dict(os.environ, TF_CONFIG=json.dumps(
          {"cluster": cluster, "task": {"type": "worker", "index": i}})))
      for i, log in enumerate(logs)]
  codes = [p.wait() for p in processes]
  for i, (code, log) in enumerate(zip(codes, logs)):
    log.seek(0)
    text = log.read()
    if code or i == 0:
      sys.stderr.write(text if not code else f"worker {i} exited {code}:\n{text[-3000:]}")
  sys.exit(1 if any(codes) else 0)


def make_inputs(work):
  """(records prefix glob, bert_config.json, initial checkpoint) in `work`."""
  import io  # pylint: disable=import-outside-toplevel
  import modeling  # pylint: disable=import-outside-toplevel
  from pretraining_data import pipeline  # pylint: disable=import-outside-toplevel
  import tf_keras  # pylint: disable=import-outside-toplevel
  prefix = os.path.join(work, "records")
  summary = pipeline.run(pipeline.PretrainingDataOptions(
      input_file=FLAGS.corpus, output_file=prefix, vocab_file=FLAGS.vocab_file,
      max_seq_length=FLAGS.seq_length, max_predictions_per_seq=PREDICTIONS,
      dupe_factor=FLAGS.dupe_factor, num_output_shards=4, overwrite=True), io.StringIO())
  config = modeling.BertConfig.preset(FLAGS.preset, hidden_dropout_prob=FLAGS.dropout,
                                      attention_probs_dropout_prob=FLAGS.dropout)
  config_file = os.path.join(work, "bert_config.json")
  with open(config_file, "w", encoding="utf-8") as f:
    f.write(config.to_json_string())
  tf_keras.utils.set_random_seed(1)
  model = modeling.build_pretraining_model(config, seq_length=FLAGS.seq_length,
                                           max_predictions_per_seq=PREDICTIONS)
  init = modeling.new_checkpoint(model).save(os.path.join(work, "init", "ckpt"))
  print(f"{summary.instances:,} records from {FLAGS.corpus} (dupe_factor {FLAGS.dupe_factor}, "
        f"4 shards); {FLAGS.preset} {config.num_hidden_layers}/{config.hidden_size}, dropout "
        f"{FLAGS.dropout}, seq {FLAGS.seq_length}, global batch {FLAGS.batch_size}, "
        f"{FLAGS.steps} steps", flush=True)
  return f"{prefix}-*", config_file, init


def command(run, job_flags):
  """The command line of `run` (see the module doc)."""
  script = [sys.executable, os.path.abspath(__file__)]
  if run == "one_device":
    return [sys.executable, "run_pretraining.py", *job_flags]
  if run == "mirrored2":
    return [*script, _REPLICAS_CHILD, "2", *job_flags, "--distribution_strategy=mirrored"]
  if run in ("workers1", "workers2"):
    return [*script, _CLUSTER_CHILD, run[-1], *job_flags,
            "--distribution_strategy=multi_worker_mirrored"]
  raise app.UsageError(f"unknown run {run!r}")


def main(argv):
  del argv
  from training import summaries  # pylint: disable=import-outside-toplevel
  work = FLAGS.work_dir or tempfile.mkdtemp(prefix="training_scaling-")
  os.makedirs(work, exist_ok=True)
  print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start", flush=True)
  losses, rows = {}, []
  try:
    records, config_file, init = make_inputs(work)
    for run in FLAGS.runs:
      output_dir = os.path.join(work, run)
      shutil.rmtree(output_dir, ignore_errors=True)
      job_flags = [
          f"--input_file={records}", f"--bert_config_file={config_file}",
          f"--init_checkpoint={init}", f"--output_dir={output_dir}", "--do_train",
          f"--max_seq_length={FLAGS.seq_length}", f"--max_predictions_per_seq={PREDICTIONS}",
          f"--train_batch_size={FLAGS.batch_size}", f"--learning_rate={FLAGS.learning_rate}",
          f"--num_train_steps={FLAGS.steps}", f"--num_warmup_steps={FLAGS.log_steps}",
          f"--log_steps={FLAGS.log_steps}", f"--iterations_per_loop={FLAGS.log_steps}",
          f"--save_checkpoints_steps={FLAGS.steps}", "--seed=1"]
      try:
        m = measure(command(run, job_flags), env=child_env(FLAGS.threads))
      except RuntimeError as e:  # the other runs still tell something
        print(f"{run}: {e}", flush=True)
        continue
      scalars = summaries.read_scalars(output_dir)
      losses[run] = scalars["loss"]
      rates = [r for step, r in sorted(scalars["examples_per_second"].items())][1:]
      rate = statistics.median(rates)
      rows.append((run, rate, m))
      print(f"{run:11s} {rate:7.1f} examples/s (median of {len(rates)} windows after the "
            f"first; {min(rates):.1f}-{max(rates):.1f})  {m.seconds:6.1f} s wall  CPU "
            f"{m.cpu_seconds:7.1f} s  peak RSS {m.peak_rss:5.2f} GB  load "
            f"{os.getloadavg()[0]:.1f}", flush=True)
  finally:
    if not FLAGS.work_dir:
      shutil.rmtree(work, ignore_errors=True)

  if not rows:
    return
  base_run, base_rate, _ = rows[0]
  print(f"\nexamples/s against {base_run}:")
  for run, rate, _ in rows:
    print(f"  {run:11s} x{rate / base_rate:.2f}")
  base = losses[base_run]
  steps = sorted(base)
  print(f"\nloss at each log step ({base_run}'s; the others as relative differences):")
  print("  step " + " ".join(f"{s:>7d}" for s in steps))
  print(f"  {base_run:11s}"[:13] + " ".join(f"{base[s]:7.4f}" for s in steps))
  for run, curve in losses.items():
    if run == base_run:
      continue
    rel = [(curve[s] - base[s]) / base[s] for s in steps]
    half = steps[len(steps) // 2:]
    late = (statistics.mean(curve[s] for s in half) / statistics.mean(base[s] for s in half)
            - 1)
    print(f"  {run:11s}"[:13] + " ".join(f"{r:+7.4f}" for r in rel) +
          f"   max |rel| {max(map(abs, rel)):.4f}, second half's mean {late:+.4f}")
  print(f"load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
  if len(sys.argv) > 1 and sys.argv[1] == _REPLICAS_CHILD:
    replicas_child(sys.argv)
  elif len(sys.argv) > 1 and sys.argv[1] == _CLUSTER_CHILD:
    cluster_child(sys.argv)
  else:
    define_flags()
    app.run(main)
