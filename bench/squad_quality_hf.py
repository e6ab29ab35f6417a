"""PyTorch HuggingFace peer of `bench/squad_quality.py`: SQuAD fine-tuning with the same recipe.

`BertForQuestionAnswering` from the same HF weights directory, trained on the
same train file and predicting the same predict file, HF's way: the fast
tokenizer's overflowing windows with offsets (`truncation="only_second"`,
the overlap set per question so that windows start `doc_stride` tokens apart,
as Google's), training labels from character offsets (windows without the
whole answer point at [CLS]), and HF's question-answering post-processing
(the n_best_size best starts and ends of every window, spans inside the
context of at most max_answer_length tokens, text cut from the context by
offsets). Google's step count (int(questions / batch * epochs)), AdamW with
Google's settings (betas 0.9/0.999, epsilon 1e-6, weight decay 0.01 except
biases and LayerNorm), linear warmup then decay to 0, clipping to norm 1.0.
Writes predictions.json to --output_dir and prints one JSON line of figures.
Run in its own process (it imports torch); a dev-only benchmark peer.
"""

import argparse
import json
import os
import time

import numpy as np
import torch
import transformers

import hf_training


def read_questions(path):
  """[(id, question, context, first answer's (text, start) or None)] of a SQuAD file."""
  with open(path, encoding="utf-8") as f:
    data = json.load(f)["data"]
  return [(qa["id"], qa["question"], paragraph["context"],
           (qa["answers"][0]["text"], qa["answers"][0]["answer_start"]) if qa["answers"] else None)
          for article in data for paragraph in article["paragraphs"] for qa in paragraph["qas"]]


def windows(tokenizer, question, context, max_seq_length, doc_stride):
  """HF's overflowing windows of one question, starting doc_stride context tokens apart."""
  question_tokens = len(tokenizer(question, add_special_tokens=False)["input_ids"])
  window = max_seq_length - question_tokens - 3  # context tokens per window
  return tokenizer(question, context, truncation="only_second", max_length=max_seq_length,
                   stride=max(window - doc_stride, 0), return_overflowing_tokens=True,
                   return_offsets_mapping=True, padding="max_length")


def features(tokenizer, questions, max_seq_length, doc_stride, training):
  """Model inputs of every window, with span labels (training) or (question, offsets) maps."""
  ids, types, masks, starts, ends, owners = [], [], [], [], [], []
  for index, (_, question, context, answer) in enumerate(questions):
    encoded = windows(tokenizer, question, context, max_seq_length, doc_stride)
    for w in range(len(encoded["input_ids"])):
      ids.append(encoded["input_ids"][w])
      types.append(encoded["token_type_ids"][w])
      masks.append(encoded["attention_mask"][w])
      sequence = encoded.sequence_ids(w)
      offsets = [o if s == 1 else None for o, s in zip(encoded["offset_mapping"][w], sequence)]
      owners.append((index, offsets))
      if training:
        text, char_start = answer
        char_end = char_start + len(text)
        inside = [i for i, o in enumerate(offsets) if o and o[0] < char_end and o[1] > char_start]
        whole = (inside and offsets[inside[0]][0] <= char_start
                 and offsets[inside[-1]][1] >= char_end)
        starts.append(inside[0] if whole else 0)
        ends.append(inside[-1] if whole else 0)
  inputs = {"input_ids": torch.tensor(ids), "token_type_ids": torch.tensor(types),
            "attention_mask": torch.tensor(masks)}
  if training:
    inputs.update(start_positions=torch.tensor(starts), end_positions=torch.tensor(ends))
  return inputs, owners


def best_answers(questions, owners, start_logits, end_logits, n_best_size, max_answer_length):
  """{id: text} by HF's post-processing: the best valid span over all windows of a question."""
  best = {}
  for (index, offsets), start, end in zip(owners, start_logits, end_logits):
    context = questions[index][2]
    for s in np.argsort(start)[::-1][:n_best_size]:
      for e in np.argsort(end)[::-1][:n_best_size]:
        if offsets[s] is None or offsets[e] is None or e < s or e - s + 1 > max_answer_length:
          continue
        score = start[s] + end[e]
        if index not in best or score > best[index][0]:
          best[index] = (score, context[offsets[s][0]:offsets[e][1]])
  return {qid: best[i][1] if i in best else "" for i, (qid, _, _, _) in enumerate(questions)}


def main():
  parser = argparse.ArgumentParser(description=__doc__)
  parser.add_argument("--train_file", required=True)
  parser.add_argument("--predict_file", required=True)
  parser.add_argument("--model_dir", required=True)
  parser.add_argument("--span_weights_file",
                      help="numpy [2, H]: qa_outputs' initial weight (bias 0); default HF's draw")
  parser.add_argument("--output_dir", required=True)
  parser.add_argument("--max_seq_length", type=int, default=384)
  parser.add_argument("--doc_stride", type=int, default=128)
  parser.add_argument("--train_batch_size", type=int, default=32)
  parser.add_argument("--predict_batch_size", type=int, default=8)
  parser.add_argument("--learning_rate", type=float, default=5e-5)
  parser.add_argument("--num_train_epochs", type=float, default=2.0)
  parser.add_argument("--warmup_proportion", type=float, default=0.1)
  parser.add_argument("--n_best_size", type=int, default=20)
  parser.add_argument("--max_answer_length", type=int, default=30)
  parser.add_argument("--log_steps", type=int, default=20)
  parser.add_argument("--seed", type=int, default=12345)
  parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
  args = parser.parse_args()

  hf_training.set_up(args.threads, args.seed)
  tokenizer = transformers.BertTokenizerFast(f"{args.model_dir}/vocab.txt", do_lower_case=True)
  model = transformers.BertForQuestionAnswering.from_pretrained(args.model_dir)
  if args.span_weights_file:
    with torch.no_grad():
      model.qa_outputs.weight.copy_(torch.from_numpy(np.load(args.span_weights_file)))
      model.qa_outputs.bias.zero_()
  train = read_questions(args.train_file)
  train_inputs, _ = features(tokenizer, train, args.max_seq_length, args.doc_stride, True)
  num_windows = len(train_inputs["input_ids"])

  num_steps = int(len(train) / args.train_batch_size * args.num_train_epochs)
  train_seconds = hf_training.train_like_google(
      model, train_inputs, num_steps, args.train_batch_size, args.learning_rate,
      args.warmup_proportion, args.seed, args.log_steps)

  predict = read_questions(args.predict_file)
  predict_inputs, owners = features(tokenizer, predict, args.max_seq_length, args.doc_stride,
                                    False)
  start_logits, end_logits = [], []
  start = time.time()
  with torch.no_grad():
    for i in range(0, len(owners), args.predict_batch_size):
      out = model(**{k: v[i:i + args.predict_batch_size] for k, v in predict_inputs.items()})
      start_logits.append(out.start_logits.numpy())
      end_logits.append(out.end_logits.numpy())
  predict_seconds = time.time() - start  # the model's forward passes only, as ours logs
  answers = best_answers(predict, owners, np.concatenate(start_logits),
                         np.concatenate(end_logits), args.n_best_size, args.max_answer_length)
  os.makedirs(args.output_dir, exist_ok=True)
  with open(os.path.join(args.output_dir, "predictions.json"), "w", encoding="utf-8") as f:
    json.dump(answers, f, indent=2)
  print(json.dumps({
      "side": "huggingface", "seed": args.seed, "num_train_questions": len(train),
      "num_train_windows": num_windows, "num_train_steps": num_steps,
      "train_seconds": train_seconds,
      "train_examples_per_second": num_steps * args.train_batch_size / train_seconds,
      "num_predict_windows": len(owners), "predict_seconds": predict_seconds,
      "predict_examples_per_second": len(owners) / predict_seconds}), flush=True)


if __name__ == "__main__":
  main()
