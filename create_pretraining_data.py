"""Creates masked-LM / next-sentence TFRecords for BERT pre-training (Google's flags and format).

Streams the corpus in chunks through worker processes: memory does not grow
with the corpus and the output depends only on the flags and the inputs. With
--beam_pipeline_options the same job runs as an Apache Beam pipeline (locally,
or on Dataflow, Flink, Spark) and writes the same shard files.
See README.md, "create_pretraining_data.py".
"""

import cli  # first: Ctrl-C while the rest imports is "<script>: interrupted"

import dataclasses
import signal
import sys

from absl import flags

from pretraining_data import beam_pipeline, pipeline

flags.DEFINE_string("input_file", None,
                    "Input raw text file(s) or glob(s), comma-separated. One sentence per line, "
                    "blank lines between documents.")
flags.DEFINE_string("output_file", None,
                    "Output TFRecord file(s), comma-separated; instances go round-robin. With "
                    "--num_output_shards: the prefix of the shard files.")
flags.DEFINE_integer("num_output_shards", None,
                     "Write N shards PREFIX-00000-of-0000N ... (PREFIX: --output_file); a "
                     "record's shard follows from the seed, so the local tool and the Beam "
                     "pipeline write the same files.")
flags.DEFINE_string("beam_pipeline_options", None,
                    "Run as an Apache Beam pipeline with these comma-separated options, e.g. "
                    "runner=DirectRunner,direct_running_mode=multi_processing,"
                    "direct_num_workers=2 or runner=DataflowRunner,project=...,region=...,"
                    "temp_location=gs://... (pip install -r requirements-beam.txt).")
flags.DEFINE_string("vocab_file", None, "The vocabulary file that the BERT model was trained on.")
flags.DEFINE_bool("do_lower_case", True,
                  "Whether to lower case the input text. True for uncased models.")
flags.DEFINE_bool("do_whole_word_mask", False,
                  "Whether to mask all the WordPieces of a word together.")
flags.DEFINE_integer("max_seq_length", 128, "Maximum sequence length.")
flags.DEFINE_integer("max_predictions_per_seq", 20,
                     "Maximum number of masked LM predictions per sequence.")
flags.DEFINE_integer("random_seed", 12345, "Random seed for data generation.")
flags.DEFINE_integer("dupe_factor", 10,
                     "Number of times to duplicate the input data (with different masks).")
flags.DEFINE_float("masked_lm_prob", 0.15, "Masked LM probability.")
flags.DEFINE_float("short_seq_prob", 0.1,
                   "Probability of creating sequences shorter than the maximum length.")
flags.DEFINE_integer("num_workers", 0, "Worker processes (0: one per CPU core). "
                     "The output does not depend on it.")
flags.DEFINE_float("chunk_mb", 16.0,
                   "Input text per chunk, in MB: documents are shuffled, random-next segments "
                   "drawn and memory bounded per chunk.")
flags.DEFINE_bool("overwrite", False, "Replace existing output files.")
flags.DEFINE_bool("strict", False,
                  "Fail on a line that is not valid UTF-8 instead of skipping it.")
flags.DEFINE_bool("dynamic_masking", False,
                  "Write unmasked instances (no masked_lm_* features); run_pretraining.py then "
                  "masks them anew at each epoch (RoBERTa's dynamic masking).")

FLAGS = flags.FLAGS


def main(argv):
  del argv
  names = [f.name for f in dataclasses.fields(pipeline.Config)]
  config = pipeline.Config(**{name: getattr(FLAGS, name) for name in names})
  if config.beam_pipeline_options is None:
    # Ctrl-C and SIGTERM stop the run between tasks; temporary outputs are removed.
    signal.signal(signal.SIGINT, pipeline.request_stop)
    signal.signal(signal.SIGTERM, pipeline.request_stop)
    summary = pipeline.run(config)
  else:
    # The launcher waits on the runner: Ctrl-C and SIGTERM interrupt it; no shard is written.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    summary = beam_pipeline.run(config)
  print("\n".join(summary.lines()), file=sys.stderr)


if __name__ == "__main__":
  flags.mark_flags_as_required(["input_file", "output_file", "vocab_file"])
  cli.run(main, interrupted_note=lambda: "no output file was written")
