"""PyTorch HuggingFace peer of `bench/serving.py`: fast tokenizer + BertForSequenceClassification.

Each call tokenizes the raw pairs (truncation to max_seq_length, padding to the
batch's longest row, as HF serving code does) and runs the model under
`torch.inference_mode()`. Prints one JSON line of figures. Run in its own
process (it imports torch); a dev-only benchmark peer.
"""

import argparse
import json

import torch
import transformers

from serving import measure, read_pairs


def main():
  parser = argparse.ArgumentParser(description=__doc__)
  parser.add_argument("--model_dir", required=True)
  parser.add_argument("--dev_file", required=True)
  parser.add_argument("--max_seq_length", type=int, default=128)
  parser.add_argument("--threads", type=int, default=2)
  parser.add_argument("--calls", type=int, default=200)
  parser.add_argument("--rounds", type=int, default=3)
  parser.add_argument("--warmup", type=int, default=200)
  args = parser.parse_args()
  torch.set_num_threads(args.threads)
  tokenizer = transformers.BertTokenizerFast(f"{args.model_dir}/vocab.txt", do_lower_case=True)
  model = transformers.BertForSequenceClassification.from_pretrained(args.model_dir,
                                                                     num_labels=2).eval()

  def call(texts_a, texts_b):
    with torch.inference_mode():
      encoded = tokenizer(texts_a, texts_b, truncation="longest_first",
                          max_length=args.max_seq_length, padding=True, return_tensors="pt")
      return torch.softmax(model(**encoded).logits, dim=-1)
  figures = measure(call, read_pairs(args.dev_file), args.calls, args.rounds, args.warmup)
  print(json.dumps({"side": "huggingface", **figures}), flush=True)


if __name__ == "__main__":
  main()
