"""The peer of bench/model.py: HF transformers' PyTorch BertModel, same shapes.

Runs in its own process (PyTorch and TensorFlow's XLA clash when loaded in
one) and prints one JSON line: seconds per batch for forward and fwd+bwd.

  python bench/model_peer.py --hidden_size=256 --num_layers=4 --batch_size=16
"""

import argparse
import json
import time

import numpy as np
import torch
import transformers


def timed(fn, steps):
  """Best seconds per call of fn over `steps` calls, after one warm-up call."""
  fn()
  times = []
  for _ in range(steps):
    start = time.perf_counter()
    fn()
    times.append(time.perf_counter() - start)
  return min(times)


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  for name, default in (("vocab_size", 30522), ("hidden_size", 768), ("num_layers", 12),
                        ("batch_size", 16), ("seq_length", 128), ("steps", 3)):
    parser.add_argument(f"--{name}", type=int, default=default)
  args = parser.parse_args()
  h = args.hidden_size
  model = transformers.BertModel(transformers.BertConfig(
      vocab_size=args.vocab_size, hidden_size=h, num_hidden_layers=args.num_layers,
      num_attention_heads=h // 64, intermediate_size=4 * h, hidden_act="gelu_new",
      type_vocab_size=2))
  rng = np.random.default_rng(0)
  shape = (args.batch_size, args.seq_length)
  inputs = dict(input_ids=torch.from_numpy(rng.integers(1, args.vocab_size, shape)),
                attention_mask=torch.ones(shape, dtype=torch.int64),
                token_type_ids=torch.zeros(shape, dtype=torch.int64))

  def forward():
    model.eval()
    with torch.no_grad():
      model(**inputs)

  def train():
    model.train()
    model.zero_grad()
    out = model(**inputs)
    (out.last_hidden_state.pow(2).mean() + out.pooler_output.mean()).backward()

  print(json.dumps({"forward": timed(forward, args.steps), "fwd_bwd": timed(train, args.steps),
                    "torch": torch.__version__, "transformers": transformers.__version__}))


if __name__ == "__main__":
  main()
