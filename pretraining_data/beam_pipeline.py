"""create_pretraining_data as an Apache Beam pipeline: the local tool's records and shard files.

Shape: one reader cuts the inputs, in order, into the local tool's chunks
(numbered over the whole corpus) -> Reshuffle (spreads the chunks over the
workers) -> per chunk: tokenize, then per dupe the records of all its parts
(`pipeline.RecordBuilder`), split by the rule of `shards`, each (shard, chunk,
dupe) piece written to a file named by those numbers in a hidden folder beside
the outputs -> once every piece is written (a side input orders the steps),
per shard: its pieces in name order, i.e. (chunk, dupe) order, copied into a
temporary shard file. Once the pipeline has succeeded the launcher renames the
temporaries to the shard names and deletes the pieces, so a runner that
retries a bundle rewrites the same files, and a failed or interrupted run
leaves no shard file. No step needs a shard's records in one worker's memory,
and nothing depends on how a runner groups elements. The records and the rule are the local tool's, so the
files are byte-identical to `pipeline.run` with the same flags.

Runners: `runner=DirectRunner` (also the default) runs Beam's FnApiRunner
with the direct_* options; Beam's own DirectRunner would first try its Prism
runner, which downloads a binary. Any other runner (DataflowRunner,
FlinkRunner, SparkRunner, ...) is Beam's. Files go through Beam's file systems
(local, gs://, ...). Memory: Beam's local runners hold the data set in memory.

Apache Beam is optional (requirements-beam.txt): it is imported by `run` only.
"""

import collections
import logging
import os
import sys
import time

from cli import FlagError, UserError
from fileio.atomic import hold, let_go, remove_stale_temporaries, temporary_path
from pretraining_data import documents, instances, pipeline, shards, writer

REQUIREMENTS = "requirements-beam.txt"
_NAMESPACE = "create_pretraining_data"
_LOCAL_RUNNERS = ("directrunner", "direct", "fnapirunner", "fnapi")
_READ_COUNTERS = ("bytes_read", "lines", "documents", "bad_utf8_lines", "long_lines",
                  "nul_lines")


def _import_beam():
  try:
    import apache_beam  # pylint: disable=import-outside-toplevel  (optional dependency)
  except ImportError:
    raise FlagError("--beam_pipeline_options needs Apache Beam, which is not installed: "
                    f"pip install -r {REQUIREMENTS}") from None
  return apache_beam


def parse_options(text):
  """TFDS's convention, "runner=NAME,key=value,flag,..." -> (runner name, ["--key=value", ...]).

  No runner named is Beam's default, DirectRunner.
  """
  runner, args = "DirectRunner", []
  for item in (i.strip() for i in text.split(",")):
    if not item:
      continue
    key, has_value, value = item.partition("=")
    key = key.strip().lstrip("-")
    if not key:
      raise FlagError(f"--beam_pipeline_options: {item!r} is not key=value")
    if key == "runner":
      runner = value.strip()
    else:
      args.append(f"--{key}={value.strip()}" if has_value else f"--{key}")
  return runner, args


def _runner(beam, name):
  """The runner object for `name`, or FlagError naming the choices."""
  if name.lower() in _LOCAL_RUNNERS:
    from apache_beam.runners.portability.fn_api_runner import fn_runner  # pylint: disable=import-outside-toplevel
    # Its worker processes (direct_running_mode=multi_processing) import our packages too.
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = repo + (os.pathsep + path if path else "")
    # Its worker processes each warn that they have no semi-persistent directory.
    logging.getLogger("apache_beam.runners.portability.local_job_service").setLevel(
        logging.ERROR)
    return fn_runner.FnApiRunner()
  try:
    return beam.runners.create_runner(name)
  except (ValueError, ImportError) as e:
    raise FlagError(f"--beam_pipeline_options: runner {name!r}: {e}") from None


def _counter(name):
  from apache_beam.metrics import Metrics  # pylint: disable=import-outside-toplevel
  return Metrics.counter(_NAMESPACE, name)


def _open(path):
  from apache_beam.io.filesystem import CompressionTypes  # pylint: disable=import-outside-toplevel
  from apache_beam.io.filesystems import FileSystems  # pylint: disable=import-outside-toplevel
  return FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)


def _read_chunks(input_files, config):
  """All inputs, in order -> (chunk index, documents) of the local tool's chunks."""
  stats = documents.ReadStats(documents.long_line_chars(config.max_seq_length))
  chunker = documents.Chunker(
      documents.read_documents(input_files, stats, config.strict, _open),
      int(config.chunk_mb * 1e6), int(config.chunk_mb * 1e6))
  chunk_index = -1
  while not chunker.exhausted:
    chunk_index += 1
    docs = [doc for piece in chunker.next_chunk() for doc in piece]
    if docs:
      yield chunk_index, docs
  for name in _READ_COUNTERS:
    _counter(f"read_{name}").inc(getattr(stats, name))


_BUILDERS = {}  # {config: RecordBuilder} of this worker process


def _piece_path(pieces_dir, shard, chunk_index, dupe):
  return f"{pieces_dir}/{shard:06d}-{chunk_index:08d}-{dupe:04d}"


def _write(path, blobs):
  from apache_beam.io.filesystem import CompressionTypes  # pylint: disable=import-outside-toplevel
  from apache_beam.io.filesystems import FileSystems  # pylint: disable=import-outside-toplevel
  with FileSystems.create(path, "application/octet-stream", CompressionTypes.UNCOMPRESSED) as f:
    for blob in blobs:
      f.write(blob)


def _chunk_records(element, config, vocab, pieces_dir):
  """(chunk index, documents) -> a piece file per (shard, dupe); yields their count."""
  chunk_index, docs = element
  builder = _BUILDERS.get(config)
  if builder is None:
    builder = _BUILDERS[config] = pipeline.RecordBuilder(config, vocab)
  ids, sentence_lengths, doc_counts, n_empty = builder.tokenize(docs)
  _counter("empty_documents").inc(n_empty)
  chunk = instances.TokenizedChunk.from_pieces([(ids, sentence_lengths, doc_counts)])
  if chunk.num_documents == 0:
    return
  _counter("chunks").inc()
  parts = pipeline.plan_parts(config, chunk_index, chunk)
  stats = collections.Counter()
  for dupe in range(config.dupe_factor):
    held = writer.Records()
    for part, doc_indices in enumerate(parts):
      records, part_stats = builder.make_records(chunk, chunk_index, dupe, part, doc_indices)
      held.extend(records)
      stats.update(part_stats)
    for shard, records in enumerate(shards.split(
        held, pipeline.shard_rng(config, chunk_index, dupe), config.num_output_shards)):
      if records:
        _write(_piece_path(pieces_dir, shard, chunk_index, dupe), [b"".join(records)])
        yield 1
  for name, value in stats.items():
    _counter(name).inc(value)


def _write_shard(shard, temp_paths, pieces_dir, pieces_written):
  """Shard `shard`'s pieces, in (chunk, dupe) order -> its temporary file."""
  del pieces_written  # a side input: this step runs once every piece is written
  from apache_beam.io.filesystems import FileSystems  # pylint: disable=import-outside-toplevel
  match = FileSystems.match([f"{pieces_dir}/{shard:06d}-*"])[0]
  paths = sorted(m.path for m in match.metadata_list)

  def blobs():
    for path in paths:
      with _open(path) as f:
        while block := f.read(1 << 24):
          yield block
  _write(temp_paths[shard], blobs())


def _build(beam, p, config, input_files, vocab, temp_paths, pieces_dir):
  pieces = (p
            | "Inputs" >> beam.Create([input_files])
            | "ReadChunks" >> beam.FlatMap(_read_chunks, config)
            | "SpreadChunks" >> beam.Reshuffle()
            | "WritePieces" >> beam.FlatMap(_chunk_records, config, vocab, pieces_dir)
            | "CountPieces" >> beam.combiners.Count.Globally())
  _ = (p
       | "Shards" >> beam.Create(list(range(config.num_output_shards)))
       | "SpreadShards" >> beam.Reshuffle()
       | "WriteShards" >> beam.Map(_write_shard, temp_paths, pieces_dir,
                                   beam.pvalue.AsSingleton(pieces)))


def _counters(result):
  out = collections.Counter()
  for counter in result.metrics().query()["counters"]:
    if counter.key.metric.namespace == _NAMESPACE:
      value = counter.committed if counter.committed is not None else counter.attempted
      out[counter.key.metric.name] += value or 0
  return out


def _user_error(error):
  """The UserError inside a failed pipeline's error (runners wrap or re-raise it), if any."""
  seen = error
  while seen is not None:
    if isinstance(seen, UserError):
      return type(seen)(str(seen).split(" [while running")[0])
    seen = seen.__cause__ or seen.__context__
  return None


def run(config, progress_stream=sys.stderr):
  """Runs the job of `config` (num_output_shards and beam_pipeline_options set) on Beam.

  Every check of the local tool runs here first, before a pipeline is built.
  Returns a pipeline.Summary (max_records_held: 0, not measured).
  """
  input_files, output_files, builder = pipeline.prepare(config)
  beam = _import_beam()
  from apache_beam.io.filesystems import FileSystems  # pylint: disable=import-outside-toplevel
  from apache_beam.options.pipeline_options import PipelineOptions  # pylint: disable=import-outside-toplevel
  runner_name, args = parse_options(config.beam_pipeline_options)
  runner = _runner(beam, runner_name)
  options = PipelineOptions(args)
  logging.getLogger("apache_beam").setLevel(logging.WARNING)  # not every worker's INFO lines
  for path in output_files:
    remove_stale_temporaries(path)
  temp_paths = [temporary_path(path) for path in output_files]
  pieces_dir = temporary_path(config.output_file.strip(), "pieces")
  for path in temp_paths + [pieces_dir]:
    hold(path)  # deleted if a signal ends the launcher at once (cli.run)
  print(f"Running the Beam pipeline on {type(runner).__name__} ({len(input_files)} input "
        f"file(s) -> {len(output_files)} shard(s))", file=progress_stream, flush=True)
  start = time.monotonic()
  try:
    p = beam.Pipeline(runner=runner, options=options)
    _build(beam, p, config, input_files, builder.tokenizer.vocab, temp_paths, pieces_dir)
    try:
      result = p.run()
      result.wait_until_finish()
    except Exception as e:  # pylint: disable=broad-except  (a runner's wrapping of our error)
      user_error = _user_error(e)
      if user_error is None:
        raise
      raise user_error from None
    counts = _counters(result)
    if counts["instances"] == 0:
      raise pipeline.no_instances(input_files)
    FileSystems.rename(temp_paths, output_files)
  finally:
    left = [t for t in temp_paths if FileSystems.exists(t)]
    left += [m.path for m in FileSystems.match([f"{pieces_dir}/*"])[0].metadata_list]
    if left:
      FileSystems.delete(left)
    if os.path.isdir(pieces_dir):  # a local folder (object stores have none)
      os.rmdir(pieces_dir)
    for path in temp_paths + [pieces_dir]:
      let_go(path)
  read = documents.ReadStats(**{name: counts.pop(f"read_{name}", 0) for name in _READ_COUNTERS})
  empty_documents, chunks = counts.pop("empty_documents", 0), counts.pop("chunks", 0)
  return pipeline.Summary(input_files, output_files, counts["instances"], read, empty_documents,
                          chunks, time.monotonic() - start, counts, 0)

