"""The peer of bench/pretraining.py: keras-hub's `BertMaskedLM` training step.

Keras 3 on the TensorFlow backend (it cannot share a process with tf_keras
models), so bench/pretraining.py runs this file in its own process. Prints one
JSON line: {"sequences_per_second": ...}.

  python bench/pretraining_peer.py --layers=4 --hidden=256 --variant=float32
"""

import argparse
import json
import os
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # pylint: disable=g-import-not-at-top,wrong-import-position
import keras_hub  # pylint: disable=g-import-not-at-top,wrong-import-position
import numpy as np  # pylint: disable=g-import-not-at-top,wrong-import-position


class EpochTimer(keras.callbacks.Callback):
  def __init__(self):
    super().__init__()
    self.seconds = []

  def on_epoch_begin(self, epoch, logs=None):
    self._start = time.perf_counter()

  def on_epoch_end(self, epoch, logs=None):
    self.seconds.append(time.perf_counter() - self._start)


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--layers", type=int, required=True)
  parser.add_argument("--hidden", type=int, required=True)
  parser.add_argument("--variant", choices=["float32", "xla", "mixed_bfloat16"], required=True)
  parser.add_argument("--batch_size", type=int, default=32)
  parser.add_argument("--seq", type=int, default=128)
  parser.add_argument("--predictions", type=int, default=20)
  parser.add_argument("--steps", type=int, default=4)
  parser.add_argument("--vocab_size", type=int, default=30522)
  args = parser.parse_args()
  if args.variant == "mixed_bfloat16":
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
  backbone = keras_hub.models.BertBackbone(
      vocabulary_size=args.vocab_size, num_layers=args.layers, num_heads=args.hidden // 64,
      hidden_dim=args.hidden, intermediate_dim=4 * args.hidden, max_sequence_length=512,
      num_segments=2)
  model = keras_hub.models.BertMaskedLM(backbone, preprocessor=None)
  # Google's optimizer settings: AdamW, weight decay 0.01, global clip norm 1.
  model.compile(optimizer=keras.optimizers.AdamW(1e-4, weight_decay=0.01, epsilon=1e-6,
                                                 global_clipnorm=1.0),
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                weighted_metrics=[], jit_compile=args.variant == "xla")
  rng = np.random.default_rng(0)
  n = args.batch_size * args.steps
  x = {"token_ids": rng.integers(1000, args.vocab_size, [n, args.seq]).astype("int32"),
       "segment_ids": (np.arange(args.seq) >= args.seq // 2).astype("int32")[None].repeat(n, 0),
       "padding_mask": np.ones([n, args.seq], "int32"),
       "mask_positions": np.sort(rng.choice(np.arange(1, args.seq), [n, args.predictions]),
                                 axis=1).astype("int32")}
  y = rng.integers(1000, args.vocab_size, [n, args.predictions]).astype("int32")
  weights = np.ones([n, args.predictions], "float32")
  timer = EpochTimer()
  # Epoch 1 traces and compiles; epoch 2 is timed.
  model.fit(x, y, sample_weight=weights, batch_size=args.batch_size, epochs=2, shuffle=False,
            verbose=0, callbacks=[timer])
  print(json.dumps({"sequences_per_second": n / timer.seconds[-1]}))


if __name__ == "__main__":
  main()
