"""Creates masked-LM / next-sentence TFRecords for BERT pre-training (Google's flags and format).

Streams the corpus in chunks through worker processes: memory does not grow
with the corpus and the output depends only on the flags and the inputs. With
--beam_pipeline_options the same job runs as an Apache Beam pipeline (locally,
or on Dataflow, Flink, Spark) and writes the same shard files.
See README.md, "create_pretraining_data.py".
"""

import cli  # first: Ctrl-C while the rest imports is "<script>: interrupted"

import signal
import sys

from cli import options
from pretraining_data import beam_pipeline, pipeline

options.define_flags(pipeline.PretrainingDataOptions)


def main(argv):
  del argv
  config = options.from_flags(pipeline.PretrainingDataOptions)
  if config.beam_pipeline_options is None:
    # Ctrl-C and SIGTERM stop the run between tasks; temporary outputs are removed.
    signal.signal(signal.SIGINT, pipeline.request_stop)
    signal.signal(signal.SIGTERM, pipeline.request_stop)
    summary = pipeline.run(config)
  else:
    # Ctrl-C and SIGTERM end the launcher at once, deleting the shards' temporaries (cli.run):
    # unwound, Beam's runner printed the exception's traceback from its threads.
    summary = beam_pipeline.run(config)
  print("\n".join(summary.lines()), file=sys.stderr)


if __name__ == "__main__":
  cli.run(main, interrupted_note=lambda: "no output file was written")
