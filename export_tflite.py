"""Export a fine-tuned classifier (a run_classifier.py / task_distill.py output_dir) as a
.tflite that takes raw text: tokenizer inside, float32, float16 or int8.

  python export_tflite.py --model_dir=OUTPUT_DIR --vocab_file=vocab.txt \
      --max_seq_length=128 --output_file=model.tflite [--quantize=int8 \
      --task_name=SST-2 --data_dir=glue/SST-2]
Load it with TF Text's ops registered (see the README's "TFLite and int8").
"""

import cli  # first: Ctrl-C while the rest imports is "<script>: interrupted"

from absl import flags

from classification import flags as task_flags
import tflite

FLAGS = flags.FLAGS

flags.DEFINE_string("model_dir", None,
                    "The classifier's output_dir: checkpoint, bert_config.json, label_list.json.")
flags.DEFINE_string("output_file", None, "The .tflite file to write.")
flags.DEFINE_bool("overwrite", False, "Replace output_file if it exists.")
flags.DEFINE_enum("quantize", "none", tflite.QUANTIZATIONS,
                  "none: float32; float16: float16 weights; dynamic_int8: int8 weights, float "
                  "activations; int8: int8 weights and activations, calibrated on "
                  "--num_calibration_rows rows of the task's training file (--task_name, "
                  "--data_dir).")
flags.DEFINE_integer("num_calibration_rows", 300,
                     "int8: training rows to calibrate on, spread over the file.")
task_flags.define_data_flags()
flags.adopt_module_key_flags(task_flags)


def main(_):
  tflite.export_tflite(
      FLAGS.model_dir, FLAGS.vocab_file, FLAGS.do_lower_case, FLAGS.max_seq_length,
      FLAGS.output_file, FLAGS.quantize, FLAGS.overwrite, FLAGS.task_name, FLAGS.data_dir,
      FLAGS.num_calibration_rows, task_flags.task_options() if FLAGS.task_name else None)


if __name__ == "__main__":
  flags.mark_flags_as_required(["model_dir", "vocab_file", "output_file"])
  cli.run(main)
