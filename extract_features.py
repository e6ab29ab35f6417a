"""Extract pre-computed feature vectors from BERT (Google's flags and JSON-lines output).

Accepts Google TF1 checkpoints, HuggingFace model directories and our TF2
checkpoints as `init_checkpoint`.
"""

import cli  # first: Ctrl-C while the rest imports is "<script>: interrupted"

import dataclasses
from typing import Optional

from cli import options
from cli.options import option, required
from feature_extraction import extract
import modeling
import tokenization


@dataclasses.dataclass(frozen=True, kw_only=True)
class ExtractOptions:
  """extract_features.py's flags (Google's names and defaults)."""
  input_file: str = required("Input text: one `text_a` or `text_a ||| text_b` a line.")
  output_file: str = required("Output JSON-lines file.")
  layers: str = option("-1,-2,-3,-4", "Comma-separated encoder layer indexes.")
  bert_config_file: Optional[str] = option(
      None, "bert_config.json (or HF config.json). Default: the one stored with "
      "init_checkpoint.")
  max_seq_length: int = option(128, "Maximum total sequence length after WordPiece.")
  init_checkpoint: str = required("Google TF1 / HF / TF2 checkpoint.")
  vocab_file: str = required("The vocabulary file the model was trained on.")
  do_lower_case: bool = option(True, "Lower-case the input (uncased models).")
  batch_size: int = option(32, "Batch size for predictions.")
  overwrite: bool = option(False, "Replace existing output files.")
  # Accepted for compatibility with Google's command lines; they have no effect here.
  use_tpu: bool = option(False, "Ignored (no TPU support).")
  master: Optional[str] = option(None, "Ignored.")
  num_tpu_cores: int = option(8, "Ignored.")
  use_one_hot_embeddings: bool = option(False, "Ignored.")


options.define_flags(ExtractOptions)


def main(_):
  o = options.from_flags(ExtractOptions)
  tokenization.validate_case_matches_checkpoint(o.do_lower_case, o.init_checkpoint)
  config = modeling.resolve_config(o.bert_config_file, o.init_checkpoint)
  tokenizer = tokenization.FullTokenizer(o.vocab_file, do_lower_case=o.do_lower_case)
  tokenizer.check_vocab_size(config.vocab_size, o.bert_config_file or o.init_checkpoint)
  extract.extract_features(config, o.init_checkpoint, tokenizer, o.input_file, o.output_file,
                           o.layers, o.max_seq_length, o.batch_size, overwrite=o.overwrite)


if __name__ == "__main__":
  cli.run(main)
