"""Export a BERT checkpoint as a HuggingFace transformers directory (PyTorch, safetensors).

  python export_huggingface.py --init_checkpoint=$BERT_DIR/bert_model.ckpt \
      --vocab_file=$BERT_DIR/vocab.txt --do_lower_case=true --output_dir=/tmp/bert_hf

Writes config.json, model.safetensors, vocab.txt, tokenizer_config.json and
special_tokens_map.json; `transformers.AutoModel...from_pretrained(output_dir)`
and `AutoTokenizer.from_pretrained(output_dir)` load them. Any checkpoint
`modeling.load_checkpoint` reads (Google TF1, HuggingFace, ours, a
run_classifier / run_squad / task_distill output_dir); the HF class follows its
heads: BertModel, BertForPreTraining, BertForSequenceClassification,
BertForQuestionAnswering.
"""

import cli  # first: Ctrl-C while the rest imports is "<script>: interrupted"

from absl import flags
from absl import logging

from modeling.checkpoints import huggingface_export

FLAGS = flags.FLAGS

flags.DEFINE_string("init_checkpoint", None,
                    "The checkpoint to export: Google TF1 / HF / ours, or an output_dir of "
                    "run_classifier.py, run_squad.py or task_distill.py.")
flags.DEFINE_string("bert_config_file", None,
                    "bert_config.json (or HF config.json). Default: the one stored with "
                    "init_checkpoint (run_squad.py's output_dir has none: pass it).")
flags.DEFINE_string("vocab_file", None, "The model's vocab.txt, written to output_dir.")
flags.DEFINE_bool("do_lower_case", None,
                  "Lower-case input text (uncased models), written to tokenizer_config.json. "
                  "Default: from the vocab file's path ('uncased' or 'cased' in it), else an "
                  "error.")
flags.DEFINE_string("output_dir", None,
                    "The directory to write (created if needed; its other files are left alone).")
flags.DEFINE_bool("overwrite", False, "Replace the files of an earlier export in output_dir.")


def main(_):
  logging.set_verbosity(logging.INFO)
  huggingface_export.export_huggingface(
      FLAGS.init_checkpoint, FLAGS.output_dir, FLAGS.vocab_file, FLAGS.do_lower_case,
      FLAGS.bert_config_file, FLAGS.overwrite)


if __name__ == "__main__":
  flags.mark_flags_as_required(["init_checkpoint", "vocab_file", "output_dir"])
  cli.run(main)
