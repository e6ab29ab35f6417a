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

import dataclasses
from typing import Optional

from absl import logging

from cli import options
from cli.options import option, required
from modeling.checkpoints import huggingface_export


@dataclasses.dataclass(frozen=True, kw_only=True)
class ExportOptions:
  """export_huggingface.py's flags (Google's names for the checkpoint, config and vocabulary)."""
  init_checkpoint: str = required(
      "The checkpoint to export: Google TF1 / HF / ours, or an output_dir of "
      "run_classifier.py, run_squad.py or task_distill.py.")
  bert_config_file: Optional[str] = option(
      None, "bert_config.json (or HF config.json). Default: the one stored with "
      "init_checkpoint.")
  vocab_file: str = required("The model's vocab.txt, written to output_dir.")
  do_lower_case: Optional[bool] = option(
      None, "Lower-case input text (uncased models), written to tokenizer_config.json. "
      "Default: from the vocab file's path ('uncased' or 'cased' in it), else an error.")
  output_dir: str = required(
      "The directory to write (created if needed; its other files are left alone).")
  overwrite: bool = option(False, "Replace the files of an earlier export in output_dir.")


options.define_flags(ExportOptions)


def main(_):
  logging.set_verbosity(logging.INFO)
  o = options.from_flags(ExportOptions)
  huggingface_export.export_huggingface(o.init_checkpoint, o.output_dir, o.vocab_file,
                                        o.do_lower_case, o.bert_config_file, o.overwrite)


if __name__ == "__main__":
  cli.run(main)
