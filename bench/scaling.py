"""How the cost of create_pretraining_data.py grows with the corpus: time, instances/s, memory.

Builds corpora of the given sizes from the shared real text (every .txt corpus
under --corpus_dir, split into documents and repeated, the documents shuffled
anew in each copy, so no two copies are alike), then runs, per size, our CLI as
users run it (a fresh process, wall clock with start-up): the local tool with 1
and 2 worker processes, and the Beam pipeline on its local runner (Beam's
FnApiRunner, multi-process, 2 workers). Every run writes --num_output_shards
shards; the Beam rows also check that their shards are byte-identical to the
local tool's. Peak PSS and RSS are sampled over the process tree
(`process_memory`), and the CPU time (user + system) of the whole process tree:
CPU seconds per MB hardly change with other jobs on the machine, wall time does. Then, per kind of run, how seconds per MB and peak memory
change from the smallest corpus to each larger one (targets: time linear within
±15% per MB; the local tool's memory at most 1.2x).

Beam needs `pip install -r requirements-beam.txt` (run this with that Python);
`--runs=local1,local2` leaves it out. The corpora are written to --work_dir
(about 1.7x the largest size: the text and one run's shards).

  python bench/scaling.py --vocab_file=../shared/fixtures/google_bert_tiny/vocab.txt \\
      --sizes_mb=15,150 [--runs=local1,local2,beam] [--dupe_factor=1]
"""

import glob
import hashlib
import os
import re
import shutil
import sys
import tempfile

from absl import app, flags
import numpy as np

from process_memory import REPO, measure  # bench/

flags.DEFINE_string("vocab_file", None, "Vocabulary.")
flags.DEFINE_string("corpus_dir", os.path.join(REPO, "..", "shared", "data", "corpus"),
                    "Folder whose *.txt files (one sentence per line, blank lines between "
                    "documents) are the text to repeat.")
flags.DEFINE_list("sizes_mb", ["15", "150", "1500"], "Corpus sizes, in MB of text.")
flags.DEFINE_list("runs", ["local1", "local2", "beam"],
                  "local1, local2: the local tool with 1 / 2 workers; beam: the Beam pipeline, "
                  "local multi-process runner with 2 workers.")
flags.DEFINE_float("beam_max_mb", 150, "Largest corpus the Beam row runs on (its local "
                   "runner holds the data in memory).")
flags.DEFINE_integer("dupe_factor", 1, "dupe_factor of every run.")
flags.DEFINE_integer("num_output_shards", 4, "Shards every run writes.")
flags.DEFINE_string("work_dir", None, "Where corpora and outputs go (default: a temporary "
                    "folder, deleted at the end).")
FLAGS = flags.FLAGS

BEAM_OPTIONS = "runner=DirectRunner,direct_running_mode=multi_processing,direct_num_workers=2"


def read_documents(corpus_dir):
  """Every document (its lines, as bytes ending in a newline) of the *.txt files."""
  docs = []
  for path in sorted(glob.glob(os.path.join(corpus_dir, "*.txt"))):
    with open(path, "rb") as f:
      docs.extend(d.strip(b"\n") + b"\n" for d in re.split(rb"\n\s*\n", f.read()) if d.strip())
  return docs


def write_corpus(path, docs, size_mb, seed=0):
  """`docs` repeated, shuffled anew per copy, until `size_mb` MB; returns the bytes written."""
  rng, written, target = np.random.default_rng(seed), 0, size_mb * 1e6
  with open(path, "wb") as f:
    while written < target:
      for i in rng.permutation(len(docs)).tolist():
        f.write(docs[i] + b"\n")
        written += len(docs[i]) + 1
        if written >= target:
          break
  return written


def shard_digest(prefix):
  h = hashlib.sha256()
  for path in sorted(glob.glob(prefix + "-*-of-*")):
    with open(path, "rb") as f:
      for block in iter(lambda: f.read(1 << 24), b""):
        h.update(block)
  return h.hexdigest()


def main(argv):
  del argv
  work = FLAGS.work_dir or tempfile.mkdtemp(prefix="scaling-")
  os.makedirs(work, exist_ok=True)
  docs = read_documents(FLAGS.corpus_dir)
  print(f"{len(docs):,} documents from {FLAGS.corpus_dir}; {os.cpu_count()} cores, load "
        f"average {os.getloadavg()[0]:.2f} at start; dupe_factor {FLAGS.dupe_factor}, "
        f"{FLAGS.num_output_shards} shards", flush=True)
  commands = {
      "local1": ("local tool, 1 worker", ["--num_workers=1"]),
      "local2": ("local tool, 2 workers", ["--num_workers=2"]),
      "beam": ("Beam, local runner, 2 workers", [f"--beam_pipeline_options={BEAM_OPTIONS}"]),
  }
  rows = []
  try:
    for size in map(float, FLAGS.sizes_mb):
      corpus = os.path.join(work, "corpus.txt")
      mb = write_corpus(corpus, docs, size) / 1e6
      digests = {}
      for run in FLAGS.runs:
        if run == "beam" and size > FLAGS.beam_max_mb:
          continue
        name, extra = commands[run]
        prefix = os.path.join(work, run)
        cmd = [sys.executable, "create_pretraining_data.py", f"--input_file={corpus}",
               f"--output_file={prefix}", f"--vocab_file={FLAGS.vocab_file}",
               f"--dupe_factor={FLAGS.dupe_factor}",
               f"--num_output_shards={FLAGS.num_output_shards}", *extra]
        m = measure(cmd)
        seconds, cpu, pss, rss, err = m.seconds, m.cpu_seconds, m.peak_pss, m.peak_rss, m.stderr
        instances = int(re.search(r"Wrote ([\d,]+) instances", err).group(1).replace(",", ""))
        digests[run] = shard_digest(prefix)
        local = digests.get("local1", digests.get("local2"))
        same = f"  same bytes as local: {digests[run] == local}" if run == "beam" and local else ""
        for path in glob.glob(prefix + "-*-of-*"):
          os.remove(path)
        rows.append((run, name, mb, instances, seconds, pss, rss))
        print(f"{mb:8.1f} MB  {name:30s} {instances:10,d} instances {seconds:8.1f} s "
              f"{instances / seconds:8,.0f} inst/s {seconds / mb:6.3f} s/MB  "
              f"CPU {cpu:8.1f} s ({cpu / mb:5.3f} s/MB)  peak PSS "
              f"{pss:5.2f} GB  RSS {rss:5.2f} GB  load {os.getloadavg()[0]:.1f}{same}",
              flush=True)
  finally:
    if not FLAGS.work_dir:
      shutil.rmtree(work, ignore_errors=True)

  print("\nGrowth from the smallest corpus (per kind of run): seconds per MB and peak RSS")
  for run in FLAGS.runs:
    mine = [r for r in rows if r[0] == run]
    if len(mine) < 2:
      continue
    _, name, mb0, _, s0, _, rss0 = mine[0]
    for _, _, mb, _, seconds, _, rss in mine[1:]:
      print(f"  {name:30s} {mb0:.0f} -> {mb:.0f} MB: s/MB x{(seconds / mb) / (s0 / mb0):.2f}, "
            f"peak RSS x{rss / rss0:.2f}")
  print(f"load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
  flags.mark_flags_as_required(["vocab_file"])
  app.run(main)
