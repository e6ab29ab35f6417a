"""PyTorch HuggingFace peer of `bench/glue_quality.py`: the same fine-tuning recipe.

`BertForSequenceClassification` from the same HF weights directory, the same
data files and split, batch size, epochs and number of steps
(int(len(train) / batch * epochs)), AdamW with Google's settings (lr, betas
0.9/0.999, epsilon 1e-6, weight decay 0.01 except biases and LayerNorm), linear
warmup over warmup_proportion of the steps then linear decay to 0, gradient
clipping to global norm 1.0, dropout 0.1; each training batch cut to its longest
row, as a Trainer user's `DataCollatorWithPadding` pads (run_classifier cuts its
batches too). Prints one JSON line of results.
Run in its own process (it imports torch); a dev-only benchmark peer.
"""

import argparse
import csv
import json

import torch
import transformers

import hf_training

# Task -> (text_a column, text_b column or None, label column, test header?) as in GLUE's files.
_LAYOUTS = {"mrpc": (3, 4, 0), "sst-2": (0, None, 1)}


def read_tsv(path, task, limit=None):
  """GLUE rows (header skipped) as (text_a, text_b, label); `limit` keeps the first rows."""
  a, b, label = _LAYOUTS[task]
  with open(path, encoding="utf-8-sig") as f:
    rows = list(csv.reader(f, delimiter="\t", quotechar=None))[1:]
  if limit:
    rows = rows[:limit]
  return [(r[a], r[b] if b is not None else None, int(r[label])) for r in rows]


def encode(tokenizer, examples, max_seq_length):
  texts_a = [e[0] for e in examples]
  texts_b = [e[1] for e in examples] if examples[0][1] is not None else None
  enc = tokenizer(texts_a, texts_b, max_length=max_seq_length, truncation="longest_first",
                  padding="max_length", return_tensors="pt")
  return enc, torch.tensor([e[2] for e in examples])


def main():
  parser = argparse.ArgumentParser(description=__doc__)
  parser.add_argument("--task", choices=sorted(_LAYOUTS), required=True)
  parser.add_argument("--data_dir", required=True)
  parser.add_argument("--model_dir", required=True)
  parser.add_argument("--max_seq_length", type=int, default=128)
  parser.add_argument("--train_batch_size", type=int, default=32)
  parser.add_argument("--learning_rate", type=float, default=5e-5)
  parser.add_argument("--num_train_epochs", type=float, default=3.0)
  parser.add_argument("--warmup_proportion", type=float, default=0.1)
  parser.add_argument("--train_limit", type=int, default=None)
  parser.add_argument("--seed", type=int, default=12345)
  parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
  args = parser.parse_args()

  hf_training.set_up(args.threads, args.seed)
  train = read_tsv(f"{args.data_dir}/train.tsv", args.task, args.train_limit)
  dev = read_tsv(f"{args.data_dir}/dev.tsv", args.task)
  tokenizer = transformers.BertTokenizerFast(f"{args.model_dir}/vocab.txt", do_lower_case=True)
  model = transformers.BertForSequenceClassification.from_pretrained(
      args.model_dir, num_labels=2, classifier_dropout=0.1)
  train_enc, train_labels = encode(tokenizer, train, args.max_seq_length)
  dev_enc, dev_labels = encode(tokenizer, dev, args.max_seq_length)

  num_steps = int(len(train) / args.train_batch_size * args.num_train_epochs)
  train_seconds = hf_training.train_like_google(
      model, dict(train_enc, labels=train_labels), num_steps, args.train_batch_size,
      args.learning_rate, args.warmup_proportion, args.seed, log_steps=50, pad_to_longest=True)

  logits = []
  with torch.no_grad():
    for i in range(0, len(dev), 64):
      logits.append(model(**{k: v[i:i + 64] for k, v in dev_enc.items()}).logits)
  preds = torch.cat(logits).argmax(-1).numpy()
  labels = dev_labels.numpy()
  tp = int(((preds == 1) & (labels == 1)).sum())
  result = {"peer": "huggingface", "task": args.task, "seed": args.seed,
            "num_train_examples": len(train), "num_train_steps": num_steps,
            "eval_accuracy": float((preds == labels).mean()),
            "eval_f1": 2 * tp / (2 * tp + int((preds != labels).sum())),
            "train_seconds": train_seconds,
            "examples_per_second": num_steps * args.train_batch_size / train_seconds}
  print(json.dumps(result), flush=True)


if __name__ == "__main__":
  main()
