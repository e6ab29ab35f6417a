"""Encoder speed: forward and forward+backward, with and without XLA, vs the matmul peak.

For each preset (seq 128): examples/s and the achieved FLOP/s as a fraction
of this machine's float32 matmul peak, measured in the same run. With
--peer (default when importable), HF transformers' PyTorch `BertModel` with
the same shapes runs too (bench/model_peer.py, its own process), and our
speed is given as a ratio to it (>1 = we are faster).

  python bench/model.py --presets=mini,small,base --batch_size=16
"""

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import cli  # pylint: disable=unused-import,wrong-import-position  # our scripts' TensorFlow settings (oneDNN)
import tensorflow as tf  # pylint: disable=wrong-import-position
import modeling  # pylint: disable=g-import-not-at-top,wrong-import-position
from modeling.params import forward_flops  # pylint: disable=g-import-not-at-top,wrong-import-position


class MatmulProbe:
  """The machine's float32 matmul rate, sampled between the model's steps.

  Other jobs share the machine and its load changes within minutes, so a peak
  measured once is not comparable with a model step measured later. Each
  model step is followed by a probe (n x n matmuls, n = 1024 and 2048) and a
  row's fraction of peak uses the best probe of its own time window.
  """

  def __init__(self):
    self.matmul = tf.function(tf.matmul)
    self.inputs = {n: (tf.random.normal([n, n]), tf.random.normal([n, n])) for n in (1024, 2048)}
    for a, b in self.inputs.values():
      self.matmul(a, b).numpy()

  def rate(self):
    best = 0.0
    for n, (a, b) in self.inputs.items():
      start = time.perf_counter()
      self.matmul(a, b).numpy()
      best = max(best, 2 * n ** 3 / (time.perf_counter() - start))
    return best


def timed_with_peak(fn, steps, probe):
  """(best seconds of fn, best matmul FLOP/s) over `steps` alternating samples."""
  fn()
  times, peaks = [], []
  for _ in range(steps):
    start = time.perf_counter()
    fn()
    times.append(time.perf_counter() - start)
    peaks.append(probe.rate())
  return min(times), max(peaks)


def features(config, batch, seq):
  rng = np.random.default_rng(0)
  return {"input_ids": rng.integers(1, config.vocab_size, (batch, seq)).astype(np.int32),
          "input_mask": np.ones((batch, seq), np.int32),
          "segment_ids": np.zeros((batch, seq), np.int32)}


def ours(config, batch, seq, jit):
  """(forward, forward+backward) callables running one batch through our encoder."""
  encoder = modeling.build_encoder(config)
  feats = features(config, batch, seq)

  @tf.function(jit_compile=jit)
  def forward(f):
    return encoder(f, training=False)["sequence_output"]

  @tf.function(jit_compile=jit)
  def train(f):
    with tf.GradientTape() as tape:
      out = encoder(f, training=True)
      loss = tf.reduce_mean(tf.square(out["sequence_output"])) + tf.reduce_mean(
          out["pooled_output"])
    grads = tape.gradient(loss, encoder.trainable_weights)
    # Embedding gradients are IndexedSlices (sparse, as an optimizer applies them).
    return [g.values if isinstance(g, tf.IndexedSlices) else g for g in grads]

  return (lambda: forward(feats).numpy()), (lambda: [g.numpy() for g in train(feats)])


def peer(config, batch, seq, steps):
  """(forward s, forward+backward s) of the PyTorch peer, run in its own process."""
  result = subprocess.run(
      [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "model_peer.py"),
       f"--vocab_size={config.vocab_size}", f"--hidden_size={config.hidden_size}",
       f"--num_layers={config.num_hidden_layers}", f"--batch_size={batch}",
       f"--seq_length={seq}", f"--steps={steps}"],
      check=True, capture_output=True, text=True)
  times = json.loads(result.stdout.strip().splitlines()[-1])
  return times["forward"], times["fwd_bwd"], f"torch {times['torch']}"


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--presets", default="mini,small,base")
  parser.add_argument("--batch_size", type=int, default=16)
  parser.add_argument("--seq_length", type=int, default=128)
  parser.add_argument("--steps", type=int, default=3)
  parser.add_argument("--peer", default="auto", choices=["auto", "yes", "no"])
  args = parser.parse_args()
  use_peer = args.peer == "yes" or (args.peer == "auto" and all(
      importlib.util.find_spec(m) for m in ("torch", "transformers")))

  print(f"machine: {os.cpu_count()} CPUs, TensorFlow {tf.__version__}; "
        f"batch {args.batch_size}, seq {args.seq_length}, best of {args.steps} steps", flush=True)
  probe = MatmulProbe()
  print(f"{'preset':<7}{'mode':<9}{'XLA':<5}{'ex/s':>8}{'GFLOP/s':>9}{'peak':>7}{'of peak':>9}"
        + ("  vs HF-PyTorch" if use_peer else ""), flush=True)
  for name in args.presets.split(","):
    config = modeling.BertConfig.preset(name)
    flops = forward_flops(config, args.seq_length) * args.batch_size
    peer_times = peer(config, args.batch_size, args.seq_length, args.steps) if use_peer else None
    for jit in (False, True):
      for k, (mode, fn) in enumerate(zip(("forward", "fwd+bwd"),
                                         ours(config, args.batch_size, args.seq_length, jit))):
        seconds, peak = timed_with_peak(fn, args.steps, probe)
        rate = flops * (1, 3)[k] / seconds
        line = (f"{name:<7}{mode:<9}{'on' if jit else 'off':<5}{args.batch_size / seconds:>8.1f}"
                f"{rate / 1e9:>9.1f}{peak / 1e9:>7.0f}{rate / peak:>9.1%}")
        if peer_times:
          line += f"  {peer_times[k] / seconds:.2f}x"
        print(line, flush=True)
    if peer_times:
      print(f"{name:<7}HF-PyTorch ({peer_times[2]}): fwd {args.batch_size / peer_times[0]:.1f} "
            f"ex/s, fwd+bwd {args.batch_size / peer_times[1]:.1f} ex/s", flush=True)


if __name__ == "__main__":
  main()
