"""Export a fine-tuned classifier (a run_classifier.py / task_distill.py output_dir) as a
.tflite that takes raw text: tokenizer inside, float32, float16 or int8.

  python export_tflite.py --model_dir=OUTPUT_DIR --vocab_file=vocab.txt \
      --max_seq_length=128 --output_file=model.tflite [--quantize=int8 \
      --task_name=SST-2 --data_dir=glue/SST-2]
Load it with TF Text's ops registered (see the README's "TFLite and int8").
"""

import cli  # first: Ctrl-C while the rest imports is "<script>: interrupted"

import dataclasses
from typing import Optional

from classification.options import ProcessorFlags
from cli import options
from cli.options import option, required
import tflite


@dataclasses.dataclass(frozen=True, kw_only=True)
class ExportOptions:
  """export_tflite.py's flags (run_classifier's names for the vocabulary and the task)."""
  model_dir: str = required(
      "The classifier's output_dir: checkpoint, bert_config.json, label_list.json.")
  vocab_file: str = required("The vocabulary file the model was trained on.")
  do_lower_case: bool = option(True, "Lower-case the input (uncased models).")
  max_seq_length: int = option(128, "Maximum total sequence length after WordPiece.")
  output_file: str = required("The .tflite file to write.")
  overwrite: bool = option(False, "Replace output_file if it exists.")
  quantize: str = option(
      "none", "none: float32; float16: float16 weights; dynamic_int8: int8 weights, float "
      "activations; int8: int8 weights and activations (LayerNorms, residual sums and "
      "attention scores float), "
      "calibrated on --num_calibration_rows rows of the task's training file (--task_name, "
      "--data_dir).",
      choices=tflite.QUANTIZATIONS)
  num_calibration_rows: int = option(
      300, "int8: training rows to calibrate on, spread over the file.")
  task_name: Optional[str] = option(
      None, "int8: the task whose training rows calibrate (cola, mrpc, sst-2, ..., generic).")
  data_dir: Optional[str] = option(None, "int8: directory with the task's train file.")


options.define_flags(ExportOptions)
options.define_flags(ProcessorFlags)


def main(_):
  o = options.from_flags(ExportOptions)
  task_options = (options.from_flags(ProcessorFlags).task_options(o.task_name)
                  if o.task_name else None)
  tflite.export_tflite(o.model_dir, o.vocab_file, o.do_lower_case, o.max_seq_length,
                       o.output_file, o.quantize, o.overwrite, o.task_name, o.data_dir,
                       o.num_calibration_rows, task_options)


if __name__ == "__main__":
  cli.run(main)
