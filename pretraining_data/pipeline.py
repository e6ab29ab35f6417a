"""The whole job: stream chunks through worker processes and write shuffled records.

Determinism: work is cut into tasks that depend only on the input and the
flags (tokenisation slices; (chunk, dupe, part) instance tasks with part
boundaries set by token counts), every task's random generator is derived from
(random_seed, chunk, dupe, part), and results are consumed in task order. So
the output bytes depend on the seed and the inputs, never on `num_workers`
or timing.

Memory: the parent holds one chunk's raw text while reading, the chunk's token
ids (memory-mapped by the workers from a temporary file), the records of one
(chunk, dupe) being shuffled and at most 4 * num_workers task results in
flight. None of this grows with the corpus; it grows with `chunk_mb`.

Shuffling: Google shuffles all documents, then all instances of the corpus.
Here documents are shuffled within a chunk, random-next B segments come from
the chunk's documents, and the instances of each (chunk, dupe) are shuffled
together before being written (round-robin over a list of output files, or
by the rule of `shards` with `num_output_shards`). A corpus no larger than one
chunk gets Google's document pool; only the instance shuffle is per dupe.

`beam_pipeline.py` runs the same chunks through the same `RecordBuilder` on
Apache Beam.
"""

import collections
import concurrent.futures
import ctypes
import dataclasses
import glob
import multiprocessing
import os
import random
import shutil
import signal
import sys
import tempfile
import threading
import time
from typing import Optional

import numpy as np
# numpy loads its random module at first use (with OpenSSL, for seeding). Imported here,
# before the workers are forked, it is loaded once, instead of by this process between a
# chunk's tokenisation and its records and then by every worker at its first records task,
# all on the run's critical path.
import numpy.random  # pylint: disable=unused-import

from cli import FlagError, UserError
from cli.options import option, required
import tokenization
from fileio import (InputError, OutputError, check_outputs, file_size, filesystem,
                    resolve_input_files)
from pretraining_data import documents, instances, masking, shards, writer

# Target sizes of one task. A part's size is fixed so that results do not depend on
# num_workers (its random generator is derived from its number). A tokenisation slice does
# not change the result at all: it is small so that the workers start soon after the first
# lines are read and finish a chunk's tokenisation together, since its records cannot start
# before its last slice is in.
_TOKENIZE_SLICE_BYTES = 1 << 18
_PART_TOKENS = 1 << 16

# Tasks in flight per worker: enough queued work for the workers to go on with while this
# process shuffles and writes the records of a (chunk, dupe).
_IN_FLIGHT = 4

# Purposes of derived random generators.
_DOC_ORDER, _PART, _SHUFFLE = 0, 1, 2


@dataclasses.dataclass(frozen=True, kw_only=True)
class PretrainingDataOptions:
  """Flags of create_pretraining_data.py (Google's names and defaults) plus ours; each field
  is also its flag (`cli.options`)."""
  input_file: str = required(
      "Input raw text file(s) or glob(s), comma-separated. One sentence per line, blank lines "
      "between documents.")
  output_file: str = required(
      "Output TFRecord file(s), comma-separated; instances go round-robin. With "
      "--num_output_shards: the prefix of the shard files.")
  vocab_file: str = required("The vocabulary file that the BERT model was trained on.")
  do_lower_case: bool = option(
      True, "Whether to lower case the input text. True for uncased models.")
  do_whole_word_mask: bool = option(
      False, "Whether to mask all the WordPieces of a word together.")
  max_seq_length: int = option(128, "Maximum sequence length.")
  max_predictions_per_seq: int = option(
      20, "Maximum number of masked LM predictions per sequence.")
  random_seed: int = option(12345, "Random seed for data generation.")
  dupe_factor: int = option(
      10, "Number of times to duplicate the input data (with different masks).")
  masked_lm_prob: float = option(0.15, "Masked LM probability.")
  short_seq_prob: float = option(
      0.1, "Probability of creating sequences shorter than the maximum length.")
  num_workers: int = option(
      0, "Worker processes (0: one per CPU core). The output does not depend on it.")
  chunk_mb: float = option(
      16.0, "Input text per chunk, in MB: documents are shuffled, random-next segments drawn "
      "and memory bounded per chunk.")
  overwrite: bool = option(False, "Replace existing output files.")
  strict: bool = option(False, "Fail on a line that is not valid UTF-8 instead of skipping it.")
  dynamic_masking: bool = option(
      False, "Write unmasked instances (no masked_lm_* features); run_pretraining.py then "
      "masks them anew at each epoch (RoBERTa's dynamic masking).")
  num_output_shards: Optional[int] = option(
      None, "Write N shards PREFIX-00000-of-0000N ... (PREFIX: --output_file); a record's "
      "shard follows from the seed, so the local tool and the Beam pipeline write the same "
      "files.")
  beam_pipeline_options: Optional[str] = option(
      None, "Run as an Apache Beam pipeline with these comma-separated options, e.g. "
      "runner=DirectRunner,direct_running_mode=multi_processing,direct_num_workers=2 or "
      "runner=DataflowRunner,project=...,region=...,temp_location=gs://... "
      "(pip install -r requirements-beam.txt).")

  def validate(self):
    """Raises FlagError for settings that cannot produce instances."""
    if self.max_seq_length < 5:
      raise FlagError(f"--max_seq_length={self.max_seq_length} is too small: "
                       "[CLS] A [SEP] B [SEP] needs at least 5 positions")
    if self.max_predictions_per_seq < 1:
      raise FlagError(
          f"--max_predictions_per_seq must be >= 1, got {self.max_predictions_per_seq}")
    if self.max_predictions_per_seq > self.max_seq_length:
      raise FlagError(f"--max_predictions_per_seq={self.max_predictions_per_seq} exceeds "
                      f"--max_seq_length={self.max_seq_length}")
    if self.dupe_factor < 1:
      raise FlagError(f"--dupe_factor must be >= 1, got {self.dupe_factor}")
    if not 0.0 < self.masked_lm_prob <= 1.0:
      raise FlagError(f"--masked_lm_prob must be in (0, 1], got {self.masked_lm_prob}")
    if not 0.0 <= self.short_seq_prob <= 1.0:
      raise FlagError(f"--short_seq_prob must be in [0, 1], got {self.short_seq_prob}")
    if self.chunk_mb <= 0:
      raise FlagError(f"--chunk_mb must be > 0, got {self.chunk_mb}")
    if self.num_workers < 0:
      raise FlagError(f"--num_workers must be >= 0, got {self.num_workers}")
    if self.num_output_shards is not None:
      if self.num_output_shards < 1:
        raise FlagError(f"--num_output_shards must be >= 1, got {self.num_output_shards}")
      if "," in self.output_file:
        raise FlagError("--num_output_shards takes one --output_file prefix, not a list: "
                        f"{self.output_file!r}")
    elif self.beam_pipeline_options is not None:
      raise FlagError("--beam_pipeline_options writes shards: give --num_output_shards too")

  def output_files(self):
    """The output paths: the shards of the prefix, or the comma-separated list."""
    if self.num_output_shards is not None:
      return shards.shard_names(self.output_file.strip(), self.num_output_shards)
    paths = [p.strip() for p in self.output_file.split(",") if p.strip()]
    if not paths:
      raise OutputError("--output_file names no file")
    return paths

  @property
  def workers(self):
    """Worker processes: num_workers, or the cores this process may run on."""
    if self.num_workers:
      return self.num_workers
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def _rng(config, *keys):
  """A numpy Generator derived from the seed and integer keys (chunk, dupe, part, purpose)."""
  return np.random.default_rng(np.random.SeedSequence(config.random_seed, spawn_key=keys))


def shard_rng(config, chunk_index, dupe):
  """The generator of the shard keys of (chunk, dupe) (see `shards`)."""
  return _rng(config, chunk_index, dupe, shards.KEYS)


def plan_parts(config, chunk_index, chunk):
  """The chunk's documents in their shuffled order, cut into the (chunk, dupe, part) tasks'
  lists of document indices (the same for every dupe)."""
  order = _rng(config, chunk_index, _DOC_ORDER).permutation(chunk.num_documents)
  return list(_parts(chunk, order, _PART_TOKENS))


class RecordBuilder:
  """Tokenizer, vocabulary tables and encoder: documents -> tokenized chunks -> records.

  `vocab`: the {token: id} of `config.vocab_file`, when already loaded (Beam ships it
  to its workers instead of having each read the file).
  """

  def __init__(self, config, vocab=None):
    self.config = config
    self.tokenizer = tokenization.FullTokenizer(
        config.vocab_file, config.do_lower_case,
        tokenization.SPECIAL_TOKENS + (tokenization.MASK_TOKEN,), vocab=vocab)
    self.word_ids = instances.WordIds(self.tokenizer)
    vocab = self.tokenizer.vocab
    self.cls_id, self.sep_id, self.mask_id = vocab["[CLS]"], vocab["[SEP]"], vocab["[MASK]"]
    self.vocab_size = len(vocab)
    self.is_continuation = (np.array([t.startswith("##") for t in vocab])
                            if config.do_whole_word_mask else None)
    self.encoder = writer.ExampleEncoder(config.max_seq_length, config.max_predictions_per_seq)

  def tokenize(self, docs):
    return instances.tokenize_documents(self.tokenizer, self.word_ids, docs)

  def make_records(self, chunk, chunk_index, dupe, part, doc_indices):
    """The instances of documents `doc_indices` of `chunk` (a TokenizedChunk) for
    (chunk_index, dupe, part) -> (framed records, Counter of stats)."""
    c = self.config
    rng = _rng(c, chunk_index, dupe, part, _PART)
    spans = instances.create_instance_spans(
        chunk, doc_indices, c.max_seq_length, c.short_seq_prob,
        random.Random(int(rng.integers(1 << 63))))
    inputs = masking.build_inputs(chunk.ids, spans, c.max_seq_length, self.cls_id, self.sep_id)
    stats = collections.Counter(
        instances=len(spans.is_random_next), random_next=int(spans.is_random_next.sum()),
        documents=len(doc_indices), short_target_documents=spans.short_target_docs)
    if c.dynamic_masking:  # run_pretraining masks these at each epoch
      return self.encoder.encode_batch(inputs.input_ids, inputs.lengths, inputs.a_lengths,
                                       spans.is_random_next), stats
    masked = masking.mask_inputs(inputs, c.masked_lm_prob, c.max_predictions_per_seq,
                                 self.vocab_size, self.mask_id, self.is_continuation, rng)
    stats.update(predictions=int(masked.num_predictions.sum()), masked=masked.num_masked,
                 random_token=masked.num_random, kept=masked.num_kept)
    return self.encoder.encode_batch(masked.input_ids, inputs.lengths, inputs.a_lengths,
                                     spans.is_random_next, masked), stats


_WORKER = None  # this process's RecordBuilder
_MAPPED = {}  # {chunk_dir: the TokenizedChunk saved there}, for this process

# Set by `request_stop` (the CLI's SIGINT/SIGTERM handler). The run checks it
# between tasks and stops there: raising from inside a signal handler could land
# in multiprocessing's internals (a held lock, a finalizer that swallows it).
STOP = threading.Event()


def request_stop(signum=None, frame=None):
  """Signal handler: stop the run at its next safe point (it then raises KeyboardInterrupt)."""
  del signum, frame
  STOP.set()


def _check_stop():
  if STOP.is_set():
    raise KeyboardInterrupt


def _init_worker(config):
  """Worker initializer: workers ignore SIGINT and SIGTERM; the parent handles both.

  A signal sent to the whole process group (Ctrl-C in a terminal, `kill -- -PGID`,
  systemd) must not kill a worker: the run would end as one whose worker died
  (`WorkerLost`) instead of as interrupted. The parent stops at its next safe point and
  lets the tasks in flight finish (`_Runner.close`).
  Forked workers inherit the parent's ready `_WORKER`; spawned ones build their own.
  """
  global _WORKER
  signal.signal(signal.SIGINT, signal.SIG_IGN)
  signal.signal(signal.SIGTERM, signal.SIG_IGN)
  if _WORKER is None or _WORKER.config != config:
    _WORKER = RecordBuilder(config)


def _tokenize_task(docs):
  if _MAPPED:  # a new chunk is being read: the last one's records are all made
    _drop_chunk()
  return _WORKER.tokenize(docs)


def _drop_chunk():
  """Frees what this process held of the last chunk: its mapping, and the heap its records
  took, handed back to the OS (glibc keeps it otherwise), so that the peak stays that of one
  chunk however many chunks come. Workers call it when the next chunk starts; the parent
  at the end of each chunk (with 1 worker it is the worker too: one call per chunk)."""
  _MAPPED.clear()
  if _LIBC is not None:
    _LIBC.malloc_trim(0)


def _mapped_chunk(chunk_dir):
  """The chunk saved in `chunk_dir`, memory-mapped (one chunk at a time per process)."""
  if chunk_dir not in _MAPPED:
    _MAPPED.clear()
    _MAPPED[chunk_dir] = instances.TokenizedChunk(*(
        np.load(os.path.join(chunk_dir, f"{name}.npy"), mmap_mode="r")
        for name in ("ids", "sentence_starts", "doc_starts")))
  return _MAPPED[chunk_dir]


def _records_task(task):
  """(chunk_dir, chunk, dupe, part, doc_indices) -> make_records of the saved chunk."""
  chunk_dir, *rest = task
  return _WORKER.make_records(_mapped_chunk(chunk_dir), *rest)


class WorkerLost(UserError):
  """A worker process died in the middle of the run (killed from outside, out of memory)."""


def _wait(future):
  """`future.result()`, checking for a stop request while it waits."""
  while True:
    _check_stop()
    try:
      return future.result(timeout=0.1)
    except concurrent.futures.TimeoutError:
      pass
    except concurrent.futures.process.BrokenProcessPool:
      raise WorkerLost(
          "a worker process died (killed, or out of memory?); no output file was written. "
          "Run again; with less memory, lower --num_workers or --chunk_mb") from None


class _Runner:
  """Runs tasks in order, in-process (1 worker) or on worker processes with bounded prefetch.

  The workers are a `ProcessPoolExecutor`: its one thread that collects results reads each
  whole (a chunk's ids, a part's records: megabytes), where `multiprocessing.Pool` would have
  a second thread spin on the result pipe for as long as such a result is in it. A worker
  that dies (killed, out of memory) fails the run instead of leaving it waiting.
  """

  def __init__(self, config, worker):
    global _WORKER
    self.workers = config.workers
    _WORKER = worker
    if self.workers == 1:
      self._pool = None
    else:
      self._pool = concurrent.futures.ProcessPoolExecutor(
          self.workers, multiprocessing.get_context(), _init_worker, (config,))

  def imap(self, fn, tasks):
    """Yields fn(task) in task order, with at most `_IN_FLIGHT` * workers tasks in flight."""
    if self._pool is None:
      for task in tasks:
        _check_stop()
        yield fn(task)
      return
    pending = collections.deque()
    for task in tasks:
      pending.append(self._pool.submit(fn, task))
      if len(pending) >= _IN_FLIGHT * self.workers:
        yield _wait(pending.popleft())
    while pending:
      yield _wait(pending.popleft())

  def close(self):
    """Lets the tasks in flight finish, then stops the workers.

    Also on errors and Ctrl-C: stopping workers in the middle of a task's hand-off could
    leave the pipe between them and this process half-written.
    """
    if self._pool is not None:
      self._pool.shutdown(wait=True)


def _parts(chunk, order, part_tokens):
  """Splits the chunk's documents, in `order`, into runs of about `part_tokens` tokens."""
  sizes = chunk.sentence_starts[chunk.doc_starts[1:]] - chunk.sentence_starts[chunk.doc_starts[:-1]]
  out, size = [], 0
  for d in order.tolist():
    out.append(d)
    size += int(sizes[d])
    if size >= part_tokens:
      yield np.asarray(out)
      out, size = [], 0
  if out:
    yield np.asarray(out)


class Progress:
  """A one-line progress report on stderr, at most once per `interval` seconds."""

  def __init__(self, total_bytes, stream=sys.stderr, interval=1.0):
    self.total_bytes = total_bytes
    self.stream, self.interval = stream, interval
    self.start = self._last = time.monotonic()
    self.tty = getattr(stream, "isatty", lambda: False)()

  def update(self, done_bytes, docs, written, force=False):
    """`done_bytes`: input bytes fully processed (fractional over dupes)."""
    now = time.monotonic()
    if not force and now - self._last < self.interval:
      return
    self._last = now
    elapsed = max(now - self.start, 1e-9)
    line = (f"{docs:,} documents read, {written:,} instances written, "
            f"{done_bytes / elapsed / 1e6:.2f} MB/s")
    if 0 < done_bytes < self.total_bytes:
      line += f", ETA {elapsed * (self.total_bytes - done_bytes) / done_bytes:.0f} s"
    end = "\r" if self.tty and not force else "\n"
    print(line.ljust(100) if self.tty else line, end=end, file=self.stream, flush=True)


@dataclasses.dataclass
class Summary:
  """What a run produced (figures for the final report and for tests)."""
  input_files: list
  output_files: list
  instances: int
  read: documents.ReadStats
  empty_documents: int
  chunks: int
  seconds: float
  stats: collections.Counter
  max_records_held: int  # most serialized records the parent held at once

  def lines(self):
    s, n = self.stats, max(self.instances, 1)
    p = max(s["predictions"], 1)
    return [
        f"Wrote {self.instances:,} instances to {len(self.output_files)} file(s) in "
        f"{self.seconds:.1f} s ({self.instances / max(self.seconds, 1e-9):,.0f} instances/s, "
        f"{self.read.bytes_read / max(self.seconds, 1e-9) / 1e6:.2f} MB/s of input)",
        f"  input: {len(self.input_files)} file(s), {self.read.bytes_read:,} bytes, "
        f"{self.read.documents:,} documents in {self.chunks} chunk(s); skipped "
        f"{self.read.bad_utf8_lines:,} non-UTF-8 line(s), "
        f"{self.empty_documents:,} empty document(s)" + (
            f"; {self.read.long_lines:,} line(s) over {self.read.long_line_chars:,} "
            "characters, mostly dropped (see the warning)" if self.read.long_lines else "") + (
            f"; cleaned {self.read.nul_lines:,} line(s) holding NUL bytes (dropped, as "
            "Google's tokenizer drops them)" if self.read.nul_lines else ""),
        f"  random-next pairs: {s['random_next'] / n:.1%}; short target length: "
        f"{s['short_target_documents'] / max(s['documents'], 1):.1%} of documents",
        f"  masked positions: {s['predictions'] / n:.2f} per instance; [MASK] "
        f"{s['masked'] / p:.1%}, random token {s['random_token'] / p:.1%}, "
        f"kept {s['kept'] / p:.1%}" if s["predictions"] else
        "  masked positions: none (dynamic masking: run_pretraining.py masks at each epoch)",
    ]


def prepare(config):
  """Every check that needs no pass over the corpus, before any work starts.

  Returns (input files, output files, RecordBuilder); raises FlagError,
  InputError, OutputError or VocabError naming what is wrong.
  """
  config.validate()
  input_files = resolve_input_files(config.input_file)
  output_files = config.output_files()
  check_outputs(output_files, config.overwrite,
                {"--input_file": input_files, "--vocab_file": config.vocab_file})
  if config.num_output_shards is not None:
    others = sorted(set(filesystem.glob(f"{glob.escape(config.output_file.strip())}-*-of-*"))
                    - set(output_files))
    if others:
      raise OutputError(
          f"{others[0]} is a shard of another set ({len(others)} file(s) PREFIX-*-of-*): "
          f"readers of {config.output_file.strip()}-* would mix both; move them or write to "
          "another --output_file prefix")
  # Load and check the vocabulary here too, so a bad one fails before any worker starts.
  return input_files, output_files, RecordBuilder(config)


def no_instances(input_files):
  return InputError(
      f"no instances: the input ({', '.join(input_files)}) holds no non-empty document")


def _glibc():
  """glibc, for its malloc controls; None under another C library."""
  try:
    libc = ctypes.CDLL("libc.so.6")
  except OSError:
    return None
  return libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None


_LIBC = _glibc()
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt parameters (malloc.h)
# Allocations from this size on (a chunk's arrays) get mappings of their own, unmapped when
# freed; smaller ones (a part's arrays and records) reuse the heap.
_MMAP_THRESHOLD = 4 << 20
# Free memory at the top of the heap that glibc keeps instead of returning it at once: a
# part's arrays and records come and go there, and returning their pages after each part
# costs a page fault per page for the next. `_drop_chunk` returns it all between chunks.
_TRIM_THRESHOLD = 8 << 20


def _fix_mmap_threshold():
  """Keeps glibc from raising its mmap threshold once the first chunk's arrays are freed (its
  default): later chunks' arrays would then come from the heap and fragment it, and the peak
  would grow with the number of chunks. Sets the trim threshold (which that raise would also
  have moved). Forked workers inherit the settings."""
  if _LIBC is not None:
    _LIBC.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)
    _LIBC.mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD)


def run(config, progress_stream=sys.stderr):
  """Runs the job described by `config`; returns a Summary. Raises on bad input."""
  input_files, output_files, worker = prepare(config)
  total_bytes = sum(file_size(f) for f in input_files)
  progress = Progress(total_bytes, progress_stream)
  read_stats = documents.ReadStats(documents.long_line_chars(config.max_seq_length))
  stats = collections.Counter()
  empty_docs = chunks = max_held = 0
  done_bytes = 0.0
  start = time.monotonic()
  _fix_mmap_threshold()
  runner = _Runner(config, worker)
  tmp = tempfile.mkdtemp(prefix="pretraining_data-")
  try:
    with writer.ShardedRecordWriter(output_files, config.overwrite) as out:
      chunker = documents.Chunker(
          documents.read_documents(input_files, read_stats, config.strict),
          int(config.chunk_mb * 1e6), _TOKENIZE_SLICE_BYTES)
      chunk_index = -1
      while not chunker.exhausted:
        chunk_index += 1
        pieces = list(runner.imap(
            _tokenize_task, map(instances.PackedDocuments.pack, chunker.next_chunk())))
        chunk_bytes = chunker.last_chunk_bytes
        progress.update(done_bytes, read_stats.documents, out.count)
        empty_docs += sum(p[3] for p in pieces)
        chunk = instances.TokenizedChunk.from_pieces([p[:3] for p in pieces])
        del pieces
        if chunk.num_documents == 0:
          done_bytes += chunk_bytes
          continue
        chunks += 1
        chunk_dir = os.path.join(tmp, f"chunk{chunk_index}")
        os.mkdir(chunk_dir)
        for name in ("ids", "sentence_starts", "doc_starts"):
          np.save(os.path.join(chunk_dir, f"{name}.npy"), getattr(chunk, name))
        parts = plan_parts(config, chunk_index, chunk)
        chunk = None  # the workers map the saved copy: not held twice while records are made
        tasks = ((chunk_dir, chunk_index, dupe, p, doc_indices)
                 for dupe in range(config.dupe_factor) for p, doc_indices in enumerate(parts))
        held = writer.Records()
        for n_done, (records, task_stats) in enumerate(runner.imap(_records_task, tasks), 1):
          held.extend(records)
          stats.update(task_stats)
          max_held = max(max_held, len(held))
          if n_done % len(parts) == 0:  # all parts of one dupe are in: shuffle and write
            dupe = n_done // len(parts) - 1
            if config.num_output_shards is None:
              out.extend(held.select(
                  _rng(config, chunk_index, dupe, _SHUFFLE).permutation(len(held))))
            else:
              # (shard_records: not `records`, which would keep a shard's list past the chunk)
              for shard, shard_records in enumerate(shards.split(
                  held, shard_rng(config, chunk_index, dupe), config.num_output_shards)):
                out.write_to(shard, shard_records)
              shard_records = None
            held = writer.Records()
            done_bytes += chunk_bytes / config.dupe_factor
          progress.update(done_bytes, read_stats.documents, out.count)
        shutil.rmtree(chunk_dir)
        parts = None  # one chunk at a time: not held while the next one is read
        _drop_chunk()
      if out.count == 0:
        raise no_instances(input_files)
      progress.update(total_bytes, read_stats.documents, out.count, force=True)
      written = out.count
  finally:
    runner.close()
    shutil.rmtree(tmp, ignore_errors=True)
  return Summary(input_files, output_files, written, read_stats, empty_docs, chunks,
                 time.monotonic() - start, stats, max_held)
