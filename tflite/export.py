"""A classifier output_dir as one .tflite file that takes raw text, float or quantized.

Signatures, named and shaped as the SavedModel's (`classification.export`):
  serve_text: `text_a` (string [batch]) -> `probabilities` (float32 [batch, num_labels],
    label-list order) and `label` (string [batch]), or `score` for regression;
  serve_text_pair: `text_a`, `text_b` -> the same (an empty text_b is a single segment);
  serving_default: `input_ids`, `input_mask`, `segment_ids` (int32 [batch, max_seq_length])
    -> the same plus `logits` (float32 [batch, num_labels]).
The label names are in the model (the `label` output gathers them from a constant).
The text signatures tokenize with `tflite.text.LiteTokenizer` (TF Text's TFLite custom
ops FastBertNormalize and FastWordpieceTokenizeWithOffsets, registered by
`tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS`) and cut the batch to its longest row.

The model is built with Keras' stock layers ("keras" kernels) on every token
(no padding packing): the graph the converter turns into TFLite builtins.
"""

import os
import re

from absl import logging
import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text
from tensorflow.lite.python import convert as lite_convert
from tensorflow.lite.python import schema_py_generated as schema_fb

from classification import export as classification_export
from classification import labels as labels_lib
from classification import registry
from cli import FlagError
import fileio
from fileio import InputError
import modeling
from modeling.checkpoints.auto import GOOGLE_CONFIG_NAME
from modeling.kernels import kernels_scope
import tokenization
from tflite.hybrid import hybrid_fully_connected
from tflite.text import LiteTokenizer

# --quantize values: weights and activations float32; weights float16; weights int8 with
# float activations (dynamic range); weights and activations int8, calibrated on text.
QUANTIZATIONS = ("none", "float16", "dynamic_int8", "int8")
# --quantize=int8 leaves in float the ops whose name matches this: the LayerNorms, the residual
# sums they normalize and the projections added into them (attention output and feed-forward
# output), and each attention's scaled queries, scores, padding select, softmax and context
# (the batch matmuls). As int8 tensors the residual stream, whose few outlier features set the
# per-tensor scale, loses the resolution of all the others; with int8 scores and softmax a
# teacher on sentence pairs answered nearly one class; the int8 batch matmuls saved no
# measurable time (BENCHMARKS.md, "TFLite and int8"). The q/k/v, attention output and
# feed-forward intermediate projections and the embeddings stay int8.
INT8_FLOAT_SCOPE = (r"LayerNorm/|/layer_\d+/add(_1)?$|/output[^/]*/BiasAdd$"
                    r"|/attention/(mul|MatMul|SelectV2|Softmax|MatMul_1)$")
# --quantize=int8 computes the feed-forward output projections in TFLite's hybrid form
# (`tflite.hybrid`: int8 weights, float input and output): as full int8 ops they cost a sentence
# pair teacher about 2 points of accuracy, in float 1.5x the CPU.
INT8_HYBRID_SCOPE = r"/layer_\d+/output_dense/"
SIGNATURES = (classification_export.SIGNATURE_IDS, classification_export.SIGNATURE_TEXT,
              classification_export.SIGNATURE_TEXT_PAIR)


class LiteClassifierModule(classification_export.ClassifierModule):
  """The SavedModel's module with `LiteTokenizer`, and `logits` on the ids signature; the
  classifier inline (TFLite has no executors)."""

  SINGLE_BATCH_EXECUTOR = None

  def _serve_ids(self, input_ids, input_mask, segment_ids):
    logits = self._logits({"input_ids": input_ids, "input_mask": input_mask,
                           "segment_ids": segment_ids})
    return dict(self._predictions(logits), logits=logits)


def load_interpreter(model_path=None, model_content=None, num_threads=None):
  """A TFLite interpreter for our .tflite files: TF Text's ops registered (`SELECT_TFTEXT_OPS`)."""
  from tensorflow.lite.python import interpreter  # pylint: disable=import-outside-toplevel
  return interpreter.InterpreterWithCustomOps(
      model_path=model_path, model_content=model_content, num_threads=num_threads,
      custom_op_registerers=tf_text.tflite_registrar.SELECT_TFTEXT_OPS)


def load_classifier(model_dir):
  """(Keras classifier with the latest checkpoint's weights, label list, is_regression,
  config) of a run_classifier / task_distill output_dir."""
  if not fileio.isdir(model_dir):
    raise InputError(f"--model_dir {model_dir!r} is not a directory")
  checkpoint = tf.train.latest_checkpoint(model_dir)
  if not checkpoint:
    raise InputError(f"--model_dir {model_dir!r} has no checkpoint: pass the output_dir of a "
                     "run_classifier.py or task_distill.py training run")
  label_file = os.path.join(model_dir, labels_lib.LABEL_LIST_FILE)
  if not fileio.exists(label_file):
    raise InputError(f"--model_dir {model_dir!r} has no {labels_lib.LABEL_LIST_FILE} (the "
                     "training run writes it): the model's labels are unknown")
  label_list, is_regression = labels_lib.load_label_list(label_file)
  config = modeling.load_config(model_dir)
  with kernels_scope("keras"):  # TFLite's builtins; the whole sequence (no token packing)
    model = modeling.build_classifier(config, 1 if is_regression else len(label_list),
                                      encoder=modeling.build_encoder(config))
  logging.info("Loaded %s", modeling.load_checkpoint(model, checkpoint).summary())
  return model, (None if is_regression else label_list), is_regression, config


def calibration_texts(task_name, data_dir, num_rows, task_options=None):
  """(text_a, text_b) of `num_rows` rows spread evenly over the task's training file
  (text_b "" for single-sentence tasks)."""
  if num_rows < 1:
    raise FlagError(f"--num_calibration_rows must be positive, got {num_rows}")
  examples = registry.get_processor(task_name, **(task_options or {})).get_train_examples(
      data_dir)
  if not examples:
    raise InputError(f"no training examples in {data_dir} to calibrate int8 on")
  picked = [examples[i] for i in
            np.unique(np.linspace(0, len(examples) - 1, num_rows).round().astype(int))]
  return [(e.text_a, e.text_b or "") for e in picked]


def _representative_dataset(module, texts):
  """Calibration inputs of every signature, one row each, as (signature, {input: array})."""
  def generate():
    for text_a, text_b in texts:
      a, b = np.array([text_a.encode("utf-8")]), np.array([text_b.encode("utf-8")])
      yield classification_export.SIGNATURE_TEXT, {"text_a": a}
      yield classification_export.SIGNATURE_TEXT_PAIR, {"text_a": a, "text_b": b}
      tokens_b = module.tokenizer.tokenize(b) if text_b else None
      features = module.tokenizer.pack(module.tokenizer.tokenize(a), tokens_b,
                                       module.max_seq_length)
      yield classification_export.SIGNATURE_IDS, {k: v.numpy() for k, v in features.items()}
  return generate


def tensor_names(content):
  """{subgraph name: {tensor name: the op's name}} of the .tflite bytes `content`.

  The converter names a tensor after the op that makes it; in the second and later
  subgraphs it appends the subgraph's index to names an earlier subgraph has ("…/add_1"
  becomes "…/add_11" in subgraph 1): the op's name is the tensor's without that suffix.
  """
  model = schema_fb.ModelT.InitFromObj(schema_fb.Model.GetRootAsModel(content, 0))
  names, earlier = {}, set()
  for index, graph in enumerate(model.subgraphs):
    ops = {}
    for tensor in graph.tensors:
      name = tensor.name.decode("utf-8")
      op = name[:-len(str(index))] if index and name.endswith(str(index)) else name
      ops[name] = op if op in earlier else name
    names[graph.name.decode("utf-8")] = ops
    earlier.update(ops.values())
  return names


def scope_tensors(content, scope):
  """The names of the tensors of the .tflite bytes `content` whose op's name matches the regex
  `scope`; RuntimeError if some subgraph (signature) has none (the model's op names changed)."""
  matched, missed = [], []
  for graph, names in tensor_names(content).items():
    tensors = [t for t, op in names.items() if re.search(scope, op)]
    matched += tensors
    missed += [] if tensors else [graph]
  if missed:
    raise RuntimeError(f"no tensor of {', '.join(missed)} matches the float scope {scope!r}")
  return sorted(matched)


def convert(module, saved_model_dir, quantize, calibration=None, float_scope=INT8_FLOAT_SCOPE,
            hybrid_scope=INT8_HYBRID_SCOPE):
  """The .tflite bytes of `module` saved in saved_model_dir, quantized as `quantize`.

  int8 leaves in float the ops whose name matches the regex `float_scope` and makes the fully
  connected ops matching `hybrid_scope` hybrid (each none if empty), in every signature; a
  scope that matches nothing in one of them raises RuntimeError.
  """
  converter = tf.lite.TFLiteConverter.from_saved_model(saved_model_dir,
                                                       signature_keys=list(SIGNATURES))
  converter.allow_custom_ops = True  # TF Text's ops, registered by the interpreter
  if quantize == "float16":
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.target_spec.supported_types = [tf.float16]
  elif quantize == "dynamic_int8":
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
  elif quantize == "int8":
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = _representative_dataset(module, calibration)
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    # Calibration runs the float model, tokenizer included: the interpreter it runs in needs
    # TF Text's ops (no public setter).
    # pylint: disable-next=protected-access
    converter.target_spec._experimental_custom_op_registerers = (
        tf_text.tflite_registrar.SELECT_TFTEXT_OPS)
    # Calibrate, then quantize all but the float nodes, as the converter's own MLIR quantizer does
    # (QuantizationDebugger's denylist path).
    converter._experimental_calibrate_only = True  # pylint: disable=protected-access
    calibrated = converter.convert()
    hybrid_nodes = scope_tensors(calibrated, hybrid_scope) if hybrid_scope else []
    float_nodes = (scope_tensors(calibrated, float_scope) if float_scope else []) + hybrid_nodes
    quantized = lite_convert.mlir_quantize(calibrated, denylisted_nodes=float_nodes or None)
    return hybrid_fully_connected(quantized, set(hybrid_nodes)) if hybrid_nodes else quantized
  return converter.convert()


def export_tflite(model_dir, vocab_file, do_lower_case, max_seq_length, output_file,
                  quantize="none", overwrite=False, task_name=None, data_dir=None,
                  num_calibration_rows=300, task_options=None):
  """Writes model_dir's classifier as a .tflite to `output_file` (atomically); returns its path.

  int8 calibrates on `num_calibration_rows` rows of task_name's training file in data_dir
  (read by the task's processor, as run_classifier does; `task_options` are its options).
  """
  if quantize not in QUANTIZATIONS:
    raise FlagError(f"--quantize must be one of {', '.join(QUANTIZATIONS)}, got {quantize!r}")
  if quantize == "int8" and not (task_name and data_dir):
    raise FlagError("--quantize=int8 calibrates on the task's training rows: pass --task_name "
                    "and --data_dir")
  fileio.check_outputs([output_file], overwrite, inputs={"--vocab_file": vocab_file})
  model, label_list, is_regression, config = load_classifier(model_dir)
  config.check_seq_length(max_seq_length)
  tokenization.FullTokenizer(vocab_file, do_lower_case).check_vocab_size(
      config.vocab_size, os.path.join(model_dir, GOOGLE_CONFIG_NAME))
  calibration = (calibration_texts(task_name, data_dir, num_calibration_rows, task_options)
                 if quantize == "int8" else None)
  with fileio.staging_directory(output_file) as staging:
    label_file = labels_lib.save_label_list(staging, label_list or [], is_regression)
    module = LiteClassifierModule(model, vocab_file, do_lower_case, max_seq_length, label_list,
                                  is_regression, label_file,
                                  tokenizer=LiteTokenizer(vocab_file, do_lower_case))
    saved = os.path.join(staging, "saved_model")
    tf.saved_model.save(module, saved, signatures=classification_export.signatures(module))
    logging.info("Converting to TFLite (quantize=%s%s)", quantize,
                 f", calibrating on {len(calibration)} rows" if calibration else "")
    content = convert(module, saved, quantize, calibration)
  with fileio.atomic_output(output_file, "wb") as f:
    f.write(content)
  logging.info("Wrote %s (%.1f MB)", output_file, len(content) / 1e6)
  return output_file
