"""Export a BERT checkpoint in TF Hub's format (TF Model Garden's export_tfhub.py flags).

  --export_type=model           the encoder: hub.KerasLayer(export_path, trainable=True)
  --export_type=model_with_mlm  the encoder plus `.mlm` (masked-LM logits)
  --export_type=preprocessing   raw text -> the encoder's inputs, with our in-graph tokenizer
Any checkpoint `modeling.load_checkpoint` reads: Google TF1, HuggingFace, ours.
"""

import cli  # first: Ctrl-C while the rest imports is "<script>: interrupted"

from absl import flags

import tfhub

FLAGS = flags.FLAGS

flags.DEFINE_string("bert_config_file", None,
                    "bert_config.json (or HF config.json). Default: the one stored with "
                    "model_checkpoint_path.")
flags.DEFINE_string("model_checkpoint_path", None,
                    "The checkpoint to export (Google TF1 / HF / TF2); not for preprocessing.")
flags.DEFINE_string("export_path", None, "The SavedModel directory to write.")
flags.DEFINE_enum("export_type", "model", tfhub.EXPORT_TYPES, "What to export.")
flags.DEFINE_string("vocab_file", None, "The model's vocab.txt, stored in the SavedModel.")
flags.DEFINE_bool("do_lower_case", None,
                  "Lower-case input text (uncased models). Default: from the vocab file's path "
                  "('uncased' or 'cased' in it), else an error.")
flags.DEFINE_integer("default_seq_length", 128,
                     "preprocessing: the sequence length of the default call and of "
                     "bert_pack_inputs without seq_length.")
flags.DEFINE_bool("overwrite_export", False,
                  "Replace export_path when it holds a SavedModel written by export_tfhub.")


def main(_):
  tfhub.export_saved_model(
      FLAGS.export_type, FLAGS.export_path, FLAGS.vocab_file, FLAGS.do_lower_case,
      FLAGS.bert_config_file, FLAGS.model_checkpoint_path, FLAGS.default_seq_length,
      FLAGS.overwrite_export)


if __name__ == "__main__":
  flags.mark_flags_as_required(["export_path", "vocab_file"])
  cli.run(main)
