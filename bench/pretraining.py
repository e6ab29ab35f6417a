"""Pre-training throughput: our run_pretraining step vs keras-hub's BertMaskedLM.

For each preset (seq 128, batch 32, 20 predictions, vocab 30,522) and variant
(float32, XLA, mixed_bfloat16): sequences/s of `pretraining.run` training on
random-id TFRecords, read from its own examples_per_second summary over the
second `--steps` steps (the first window holds tracing and compilation), and
of keras-hub's `BertMaskedLM` (bench/pretraining_peer.py: Keras 3, TF backend,
`fit`, the epoch after the first) with the same shapes. Every measurement is a
fresh process; ours and the peer's alternate, so both see the same load.

Each side's matmul work per step is counted (`step_flops`: ours runs the last
layer at [CLS] and the masked positions only, the peer at every position), and
its GFLOP/s is compared with this machine's float32 matmul rate, probed right
after our measurement (bench/model.py's `MatmulProbe`): how close each step
is to what the machine's matmuls allow.

  python bench/pretraining.py --presets=mini,small --variants=float32,xla,mixed_bfloat16
  python bench/pretraining.py --presets=mini --variants=xla --kernels=fused,keras
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
# Our scripts' TensorFlow settings (oneDNN), for this process and, through the environment,
# both sides' measuring processes.
import cli  # pylint: disable=unused-import,wrong-import-position
PRESETS = {"mini": (4, 256), "small": (4, 512)}
VOCAB_SIZE, SEQ, PREDICTIONS = 30522, 128, 20


def step_flops(config, masked_positions_only):
  """Matmul FLOPs of one sequence's training step (backward = 2x forward).

  The encoder as `modeling.params.forward_flops` counts it (dense layers, attention, pooler),
  less the rows a masked-positions-only last layer skips (its query and output
  projections, feed-forward and attention rows outside [CLS] and the masked
  positions), plus the masked-LM transform and its 30,522-way decoder; the
  next-sentence head is negligible.
  """
  from modeling.params import forward_flops  # pylint: disable=import-outside-toplevel
  h, i = config.hidden_size, config.intermediate_size
  forward = forward_flops(config, SEQ) + PREDICTIONS * 2 * h * (h + config.vocab_size)
  if masked_positions_only:
    skipped_rows = SEQ - (PREDICTIONS + 1)
    forward -= skipped_rows * (2 * (2 * h * h + 2 * h * i) + 2 * 2 * SEQ * h)
  return 3 * forward


def write_records(path, num_records):
  """Random pre-training records with Google's features."""
  import numpy as np  # pylint: disable=import-outside-toplevel
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  rng = np.random.default_rng(0)

  def ints(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values))
  with tf.io.TFRecordWriter(path) as writer:
    for _ in range(num_records):
      feature = {
          "input_ids": ints(rng.integers(1000, VOCAB_SIZE, SEQ)),
          "input_mask": ints([1] * SEQ),
          "segment_ids": ints([0] * (SEQ // 2) + [1] * (SEQ // 2)),
          "masked_lm_positions": ints(np.sort(rng.choice(np.arange(1, SEQ), PREDICTIONS))),
          "masked_lm_ids": ints(rng.integers(1000, VOCAB_SIZE, PREDICTIONS)),
          "masked_lm_weights": tf.train.Feature(
              float_list=tf.train.FloatList(value=[1.0] * PREDICTIONS)),
          "next_sentence_labels": ints([int(rng.integers(2))]),
      }
      writer.write(tf.train.Example(
          features=tf.train.Features(feature=feature)).SerializeToString())


def ours(args):
  """One measurement in this process; prints {"sequences_per_second": ...}."""
  import modeling  # pylint: disable=import-outside-toplevel
  import pretraining  # pylint: disable=import-outside-toplevel
  from training import summaries  # pylint: disable=import-outside-toplevel
  layers, hidden = PRESETS[args.preset]
  work = tempfile.mkdtemp(prefix="bench_pretraining_")
  config_file = os.path.join(work, "bert_config.json")
  with open(config_file, "w", encoding="utf-8") as f:
    f.write(modeling.BertConfig.preset(args.preset, vocab_size=VOCAB_SIZE).to_json_string())
  assert modeling.BertConfig.from_json_file(config_file).num_hidden_layers == layers
  steps = args.steps
  pretraining.run(pretraining.PretrainingOptions(
      bert_config_file=config_file, input_file=args.records, output_dir=os.path.join(work, "out"),
      max_seq_length=SEQ, max_predictions_per_seq=PREDICTIONS, do_train=True,
      train_batch_size=args.batch_size, learning_rate=1e-4, num_train_steps=2 * steps,
      num_warmup_steps=0, save_checkpoints_steps=2 * steps, iterations_per_loop=steps,
      log_steps=steps, keep_checkpoint_max=1, use_xla=args.variant == "xla",
      kernels=args.kernels,
      dtype="float32" if args.variant == "xla" else args.variant))
  rate = summaries.read_scalars(os.path.join(work, "out"))["examples_per_second"]
  shutil.rmtree(work)
  from model import MatmulProbe  # pylint: disable=import-outside-toplevel  # bench/model.py
  probe = MatmulProbe()
  peak = max(probe.rate() for _ in range(5))
  print(json.dumps({"sequences_per_second": rate[2 * steps], "matmul_flops_per_second": peak}))


def measure(command):
  result = subprocess.run(command, capture_output=True, text=True, check=False,
                          cwd=os.path.dirname(HERE))
  if result.returncode:
    raise RuntimeError(f"{' '.join(command)} failed:\n{result.stderr[-3000:]}")
  return json.loads(result.stdout.strip().splitlines()[-1])


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--presets", default="mini,small")
  parser.add_argument("--variants", default="float32,xla,mixed_bfloat16")
  parser.add_argument("--batch_size", type=int, default=32)
  parser.add_argument("--steps", type=int, default=4, help="timed steps (after as many warm-up)")
  parser.add_argument("--rounds", type=int, default=1, help="measurements per row (best)")
  parser.add_argument("--kernels", default="fused",
                      help="our kernel sets to measure, comma-separated (fused, keras)")
  parser.add_argument("--mode", choices=["driver", "ours"], default="driver")
  parser.add_argument("--preset", help=argparse.SUPPRESS)
  parser.add_argument("--variant", help=argparse.SUPPRESS)
  parser.add_argument("--records", help=argparse.SUPPRESS)
  args = parser.parse_args()
  if args.mode == "ours":
    ours(args)
    return
  work = tempfile.mkdtemp(prefix="bench_pretraining_")
  records = os.path.join(work, "random.tfrecord")
  write_records(records, 2 * args.steps * args.batch_size + 100)
  try:
    table(args, records)
  finally:
    shutil.rmtree(work)


def table(args, records):
  """Measures ours and the peer alternately; prints a Markdown table."""
  import modeling  # pylint: disable=import-outside-toplevel
  print(f"seq {SEQ}, batch {args.batch_size}, {PREDICTIONS} predictions, vocab {VOCAB_SIZE}; "
        f"sequences/s over {args.steps} steps after {args.steps} warm-up steps, "
        f"best of {args.rounds}")
  print("GFLOP/s: matmul work per step / step time; machine: float32 matmul GFLOP/s (best probe)")
  print("| preset | variant | kernels | ours seq/s | keras-hub seq/s | ours / keras-hub "
        "| ours GFLOP/s | keras-hub GFLOP/s | machine GFLOP/s |")
  print("|---|---|---|---:|---:|---:|---:|---:|---:|")
  kernel_sets = args.kernels.split(",")
  for preset in args.presets.split(","):
    layers, hidden = PRESETS[preset]
    for variant in args.variants.split(","):
      mine = dict.fromkeys(kernel_sets, 0.0)
      peer = machine = 0.0
      for _ in range(args.rounds):  # best of the rounds, ours and the peer's alternating
        for kernels in kernel_sets:
          result = measure([
              sys.executable, __file__, "--mode=ours", f"--preset={preset}",
              f"--variant={variant}", f"--records={records}", f"--kernels={kernels}",
              f"--batch_size={args.batch_size}", f"--steps={args.steps}"])
          mine[kernels] = max(mine[kernels], result["sequences_per_second"])
          machine = max(machine, result["matmul_flops_per_second"])
        peer = max(peer, measure([
            sys.executable, os.path.join(HERE, "pretraining_peer.py"), f"--layers={layers}",
            f"--hidden={hidden}", f"--variant={variant}", f"--batch_size={args.batch_size}",
            f"--steps={args.steps}"])["sequences_per_second"])
      config = modeling.BertConfig.preset(preset, vocab_size=VOCAB_SIZE)
      peer_gflops = peer * step_flops(config, masked_positions_only=False) / 1e9
      for kernels, rate in mine.items():
        ours_gflops = rate * step_flops(config, masked_positions_only=True) / 1e9
        print(f"| {preset} ({layers}/{hidden}) | {variant} | {kernels} | {rate:.1f} | "
              f"{peer:.1f} | {rate / peer:.2f}x | {ours_gflops:.0f} | {peer_gflops:.0f} | "
              f"{machine / 1e9:.0f} |", flush=True)


if __name__ == "__main__":
  main()
