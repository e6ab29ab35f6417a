"""Export a BERT checkpoint in TF Hub's format (TF Model Garden's export_tfhub.py flags).

  --export_type=model           the encoder: hub.KerasLayer(export_path, trainable=True)
  --export_type=model_with_mlm  the encoder plus `.mlm` (masked-LM logits)
  --export_type=preprocessing   raw text -> the encoder's inputs, with our in-graph tokenizer
Any checkpoint `modeling.load_checkpoint` reads: Google TF1, HuggingFace, ours.
"""

import cli  # first: Ctrl-C while the rest imports is "<script>: interrupted"

import dataclasses
from typing import Optional

from cli import options
from cli.options import option, required
import tfhub


@dataclasses.dataclass(frozen=True, kw_only=True)
class ExportOptions:
  """export_tfhub.py's flags (Model Garden's names)."""
  bert_config_file: Optional[str] = option(
      None, "bert_config.json (or HF config.json). Default: the one stored with "
      "model_checkpoint_path.")
  model_checkpoint_path: Optional[str] = option(
      None, "The checkpoint to export (Google TF1 / HF / TF2); not for preprocessing.")
  export_path: str = required("The SavedModel directory to write.")
  export_type: str = option("model", "What to export.", choices=tfhub.EXPORT_TYPES)
  vocab_file: str = required("The model's vocab.txt, stored in the SavedModel.")
  do_lower_case: Optional[bool] = option(
      None, "Lower-case input text (uncased models). Default: from the vocab file's path "
      "('uncased' or 'cased' in it), else an error.")
  default_seq_length: int = option(
      128, "preprocessing: the sequence length of the default call and of bert_pack_inputs "
      "without seq_length.")
  overwrite_export: bool = option(
      False, "Replace export_path when it holds a SavedModel written by export_tfhub.")


options.define_flags(ExportOptions)


def main(_):
  o = options.from_flags(ExportOptions)
  tfhub.export_saved_model(o.export_type, o.export_path, o.vocab_file, o.do_lower_case,
                           o.bert_config_file, o.model_checkpoint_path, o.default_seq_length,
                           o.overwrite_export)


if __name__ == "__main__":
  cli.run(main)
