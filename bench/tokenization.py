"""Tokenization throughput: our Python and in-graph tokenizers vs HF `tokenizers` and the char port.

All tokenizers run on the same non-blank lines of a corpus file in one run and
produce WordPiece ids without special tokens. HF `tokenizers` (the peer) runs
`encode_batch` on batches of --batch_size lines and on all lines at once; the
faster of the two is the reference for the ratios. Each measurement is repeated
(--repeats) with a fresh tokenizer and the best time is kept, since other jobs
may share the CPU. Prints lines/s and MB/s (of UTF-8 input) and the ratios.

  python bench/tokenization.py [--max_lines=N] [--batch_size=1024]
"""

import os
import pathlib
import sys
import time

from absl import app
from absl import flags

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import cli  # pylint: disable=g-import-not-at-top,unused-import  # our scripts' TensorFlow settings (oneDNN)
import tensorflow as tf  # pylint: disable=g-import-not-at-top
from tokenizers import BertWordPieceTokenizer  # pylint: disable=g-import-not-at-top

from tests import char_port  # pylint: disable=g-import-not-at-top
from tokenization import FullTokenizer  # pylint: disable=g-import-not-at-top
from tokenization.in_graph import InGraphTokenizer  # pylint: disable=g-import-not-at-top

FLAGS = flags.FLAGS
flags.DEFINE_string("corpus", str(REPO.parent / "shared/data/corpus/gutenberg_train.txt"),
                    "Text file, one sentence per line; blank lines are skipped.")
flags.DEFINE_string("vocab_file", str(REPO.parent / "shared/fixtures/google_bert_tiny/vocab.txt"),
                    "WordPiece vocabulary (uncased).")
flags.DEFINE_integer("max_lines", 0, "Use only the first N non-blank lines (0 = all).")
flags.DEFINE_integer("batch_size", 1024, "Lines per call for the in-graph and HF tokenizers.")
flags.DEFINE_integer("char_port_lines", 20_000,
                     "Lines for the slow char-by-char port (its rate is per line, so it scales).")
flags.DEFINE_integer("repeats", 3, "Runs per tokenizer; the fastest is reported.")


def best_time(run, repeats):
  """Seconds of the fastest of `repeats` calls of `run()`, and its last result."""
  best, result = float("inf"), None
  for _ in range(repeats):
    start = time.perf_counter()
    result = run()
    best = min(best, time.perf_counter() - start)
  return best, result


def run_python(lines, vocab_file):
  tokenizer = FullTokenizer(vocab_file, do_lower_case=True)  # fresh: its word cache starts cold
  return sum(len(tokenizer.convert_tokens_to_ids(tokenizer.tokenize(line))) for line in lines)


def run_char_port(lines, vocab):
  return sum(len([vocab[t] for t in char_port.full_tokenize(line, vocab, True)])
             for line in lines)


def run_hf(lines, vocab_file, batch_size):
  tokenizer = BertWordPieceTokenizer(vocab_file, lowercase=True)
  return sum(len(e.ids) for i in range(0, len(lines), batch_size)
             for e in tokenizer.encode_batch(lines[i:i + batch_size], add_special_tokens=False))


def run_in_graph_calls(tokenize, lines, batch_size):
  """One graph-mode call per batch of Python strings (conversion to tensors included)."""
  return sum(tokenize(tf.constant(lines[i:i + batch_size])).flat_values.shape[0]
             for i in range(0, len(lines), batch_size))


def in_graph_dataset(tokenizer, lines, batch_size):
  """A tf.data pipeline: batch, map(tokenize) in parallel, prefetch; yields token counts."""
  return (tf.data.Dataset.from_tensor_slices(lines).batch(batch_size)
          .map(lambda t: tf.size(tokenizer.tokenize(t).flat_values),
               num_parallel_calls=tf.data.AUTOTUNE)
          .prefetch(tf.data.AUTOTUNE))


def main(argv):
  del argv
  with open(FLAGS.corpus, encoding="utf-8") as f:
    lines = [line for line in f.read().splitlines() if line]
  if FLAGS.max_lines:
    lines = lines[:FLAGS.max_lines]
  megabytes = sum(len(line.encode("utf-8")) for line in lines) / 1e6
  print(f"{len(lines)} lines, {megabytes:.2f} MB from {FLAGS.corpus}; "
        f"batch {FLAGS.batch_size}; best of {FLAGS.repeats}; {os.cpu_count()} CPUs")

  tokenizer = InGraphTokenizer(FLAGS.vocab_file, do_lower_case=True)
  tokenize = tf.function(tokenizer.tokenize)
  tokenize(tf.constant(lines[:FLAGS.batch_size]))  # trace once
  dataset = in_graph_dataset(tokenizer, lines, FLAGS.batch_size)
  port_lines = lines[:FLAGS.char_port_lines]
  vocab = FullTokenizer(FLAGS.vocab_file).vocab

  results = {}  # name -> (seconds, lines, token count)
  for name, lines_used, run in (
      ("python FullTokenizer", lines, lambda: run_python(lines, FLAGS.vocab_file)),
      ("in-graph, tf.function calls", lines,
       lambda: run_in_graph_calls(tokenize, lines, FLAGS.batch_size)),
      ("in-graph, tf.data map", lines,
       lambda: int(dataset.reduce(0, lambda total, n: total + n))),
      ("HF tokenizers, batches", lines,
       lambda: run_hf(lines, FLAGS.vocab_file, FLAGS.batch_size)),
      ("HF tokenizers, one batch", lines, lambda: run_hf(lines, FLAGS.vocab_file, len(lines))),
      ("char-by-char port", port_lines, lambda: run_char_port(port_lines, vocab)),
  ):
    seconds, tokens = best_time(run, FLAGS.repeats)
    results[name] = (seconds, len(lines_used), tokens)

  rate = {name: n / s for name, (s, n, _) in results.items()}
  # The peer is the faster of HF's two ways of calling encode_batch.
  peer = max(rate["HF tokenizers, batches"], rate["HF tokenizers, one batch"])
  print(f"{'tokenizer':30s} {'lines/s':>10s} {'MB/s':>7s} {'vs HF':>6s} {'tokens':>10s}")
  for name, (seconds, n, tokens) in results.items():
    mb_s = rate[name] * megabytes / len(lines)
    print(f"{name:30s} {rate[name]:10.0f} {mb_s:7.2f} {rate[name] / peer:6.2f} {tokens:10d}")
  print(f"python / char port: {rate['python FullTokenizer'] / rate['char-by-char port']:.1f}x")
  counts = {results[k][2] for k in ("python FullTokenizer", "in-graph, tf.function calls",
                                    "in-graph, tf.data map")}
  if len(counts) != 1:
    raise SystemExit(f"token counts differ between our tokenizers: {counts}")


if __name__ == "__main__":
  app.run(main)
