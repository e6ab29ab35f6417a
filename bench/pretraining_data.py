"""Benchmark of create_pretraining_data.py: instances/s, MB/s of input and peak memory.

Runs our CLI (1 worker and all workers; dupe_factor 1 and 10) and an in-run
reference: our own code in a single-worker, in-memory configuration (one
chunk holding the whole corpus). With --google_runner, also runs Google's
original script (not part of this repo: pass a runner that executes it, e.g.
under tensorflow.compat.v1) as the peer in the same run: with this repo's
`tokenization` package and, given --google_tokenization_dir, with Google's own
tokenization.py as released. Without it, ratios are
against Google's figures measured on this machine at dupe_factor 1
(56 s, 37,009 instances, 0.87 GB).

MB/s is input text per second (the corpus once, whatever the dupe_factor).
Peak memory is sampled every 50 ms over the process tree (parent and workers):
PSS (shared pages split between the processes mapping them, so forked workers
are not double-counted) and RSS (every process's resident pages in full;
closest to what `time -v` reports for a single process).

  python bench/pretraining_data.py --vocab_file=../shared/fixtures/google_bert_tiny/vocab.txt \\
      --input_file=../shared/data/corpus/gutenberg_train.txt [--google_runner=/path/run_google.py]
"""

import os
import sys
import tempfile

from absl import app, flags

from process_memory import measure  # bench/

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

flags.DEFINE_string("input_file", None, "Corpus to convert.")
flags.DEFINE_string("vocab_file", None, "Vocabulary.")
flags.DEFINE_string("google_runner", None,
                    "Optional: a script running Google's create_pretraining_data.py; it is called "
                    "as `python RUNNER REPO_ROOT --input_file=... --output_file=... ...`.")
flags.DEFINE_string("google_tokenization_dir", None,
                    "Optional: a directory holding Google's original tokenization.py; Google's "
                    "script then also runs with it (as released) besides with this repo's "
                    "`tokenization` package.")
flags.DEFINE_list("google_dupe_factors", ["1"], "dupe_factor values to run Google's script at.")
flags.DEFINE_list("dupe_factors", ["1", "10"], "dupe_factor values to run ours at.")
FLAGS = flags.FLAGS

# Google's script on this machine, gutenberg_train.txt, dupe_factor 1 (stated in the issue).
STATED_GOOGLE = {"seconds": 56.0, "instances": 37009, "peak_gb": 0.87}


def count_records(path):
  n, size = 0, os.path.getsize(path)
  with open(path, "rb") as f:
    pos = 0
    while pos < size:
      f.seek(pos)
      pos += 16 + int.from_bytes(f.read(8), "little")
      n += 1
  return n


def main(argv):
  del argv
  mb = os.path.getsize(FLAGS.input_file) / 1e6
  cores = os.cpu_count()
  print(f"corpus {FLAGS.input_file} ({mb:.1f} MB), {cores} cores, load average "
        f"{os.getloadavg()[0]:.2f} at start")
  rows = []
  with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "out.tfrecord")
    common = [f"--input_file={FLAGS.input_file}", f"--output_file={out}",
              f"--vocab_file={FLAGS.vocab_file}"]
    runs = []
    for dupe in map(int, FLAGS.google_dupe_factors if FLAGS.google_runner else []):
      if FLAGS.google_tokenization_dir:
        runs.append(("Google's script + Google's tokenizer", dupe,
                     [sys.executable, FLAGS.google_runner, FLAGS.google_tokenization_dir, *common,
                      f"--dupe_factor={dupe}"]))
      runs.append(("Google's script + our tokenizer", dupe,
                   [sys.executable, FLAGS.google_runner, REPO, *common, f"--dupe_factor={dupe}"]))
    for dupe in map(int, FLAGS.dupe_factors):
      ours = [sys.executable, "create_pretraining_data.py", *common, f"--dupe_factor={dupe}",
              "--overwrite"]
      runs.append(("ours, 1 worker, in-memory (one chunk)", dupe,
                   ours + ["--num_workers=1", "--chunk_mb=1000000"]))
      runs.append(("ours, 1 worker, streaming (--chunk_mb=4)", dupe,
                   ours + ["--num_workers=1", "--chunk_mb=4"]))
      runs.append((f"ours, {cores} workers, streaming (--chunk_mb=4)", dupe,
                   ours + [f"--num_workers={cores}", "--chunk_mb=4"]))
      runs.append((f"ours, {cores} workers, default (--chunk_mb=16)", dupe,
                   ours + [f"--num_workers={cores}"]))
    for name, dupe, cmd in runs:
      if os.path.exists(out):
        os.remove(out)
      m = measure(cmd)
      n = count_records(out)
      rows.append((name, dupe, n, m.seconds, m.cpu_seconds))
      print(f"{name:45s} dupe {dupe:2d}: {n:7,d} instances {m.seconds:7.2f} s "
            f"{n / m.seconds:9,.0f} inst/s {mb / m.seconds:6.2f} MB/s  CPU {m.cpu_seconds:7.2f} s"
            f"  peak PSS {m.peak_pss:5.2f} GB  RSS {m.peak_rss:5.2f} GB  load "
            f"{os.getloadavg()[0]:.1f}", flush=True)

  print("\nRatios (instances/s; in brackets instances per CPU second):")
  peer = {d: n / s for name, d, n, s, _ in rows if name == "Google's script + our tokenizer"}
  released = {d: (n / s, n / cpu) for name, d, n, s, cpu in rows
              if name == "Google's script + Google's tokenizer"}
  inmem = {d: n / s for name, d, n, s, _ in rows if "in-memory" in name}
  stated = STATED_GOOGLE["instances"] / STATED_GOOGLE["seconds"]
  for name, dupe, n, seconds, cpu in rows:
    rate = n / seconds
    parts = []
    if dupe in released:
      parts.append(f"{rate / released[dupe][0]:5.1f}x ({n / cpu / released[dupe][1]:5.1f}x) "
                   "Google's script as released (same run)")
    if dupe in peer:
      parts.append(f"{rate / peer[dupe]:5.1f}x Google's script + our tokenizer (same run)")
    if dupe == 1 and os.path.basename(FLAGS.input_file) == "gutenberg_train.txt":
      parts.append(f"{rate / stated:5.1f}x Google's stated 56 s")
    if dupe in inmem:
      parts.append(f"{rate / inmem[dupe]:4.2f}x ours in-memory 1 worker")
    print(f"  {name:45s} dupe {dupe:2d}: " + ", ".join(parts))
  print(f"load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
  flags.mark_flags_as_required(["input_file", "vocab_file"])
  app.run(main)
