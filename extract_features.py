"""Extract pre-computed feature vectors from BERT (Google's flags and JSON-lines output).

Accepts Google TF1 checkpoints, HuggingFace model directories and our TF2
checkpoints as `init_checkpoint`.
"""

import cli  # first: Ctrl-C while the rest imports is "<script>: interrupted"

from absl import flags

from feature_extraction import extract
import modeling
import tokenization

FLAGS = flags.FLAGS

flags.DEFINE_string("input_file", None, "Input text: one `text_a` or `text_a ||| text_b` a line.")
flags.DEFINE_string("output_file", None, "Output JSON-lines file.")
flags.DEFINE_string("layers", "-1,-2,-3,-4", "Comma-separated encoder layer indexes.")
flags.DEFINE_string("bert_config_file", None,
                    "bert_config.json (or HF config.json). Default: the one stored with "
                    "init_checkpoint.")
flags.DEFINE_integer("max_seq_length", 128, "Maximum total sequence length after WordPiece.")
flags.DEFINE_string("init_checkpoint", None, "Google TF1 / HF / TF2 checkpoint.")
flags.DEFINE_string("vocab_file", None, "The vocabulary file the model was trained on.")
flags.DEFINE_bool("do_lower_case", True, "Lower-case the input (uncased models).")
flags.DEFINE_integer("batch_size", 32, "Batch size for predictions.")
flags.DEFINE_bool("overwrite", False, "Replace existing output files.")
# Accepted for compatibility with Google's command lines; they have no effect here.
flags.DEFINE_bool("use_tpu", False, "Ignored (no TPU support).")
flags.DEFINE_string("master", None, "Ignored.")
flags.DEFINE_integer("num_tpu_cores", 8, "Ignored.")
flags.DEFINE_bool("use_one_hot_embeddings", False, "Ignored.")


def main(_):
  tokenization.validate_case_matches_checkpoint(FLAGS.do_lower_case, FLAGS.init_checkpoint)
  config = modeling.resolve_config(FLAGS.bert_config_file, FLAGS.init_checkpoint)
  tokenizer = tokenization.FullTokenizer(FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case)
  tokenizer.check_vocab_size(config.vocab_size, FLAGS.bert_config_file or FLAGS.init_checkpoint)
  extract.extract_features(config, FLAGS.init_checkpoint, tokenizer, FLAGS.input_file,
                           FLAGS.output_file, FLAGS.layers, FLAGS.max_seq_length,
                           FLAGS.batch_size, overwrite=FLAGS.overwrite)


if __name__ == "__main__":
  flags.mark_flags_as_required(["input_file", "output_file", "init_checkpoint", "vocab_file"])
  cli.run(main)
