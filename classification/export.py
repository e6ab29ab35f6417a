"""SavedModel export of a fine-tuned classifier, with an in-graph tokenizer for raw text.

Signatures:
  serving_default: `input_ids`, `input_mask`, `segment_ids` (int32 [batch, seq]);
  serve_text: `text_a` (string [batch]);
  serve_text_pair: `text_a`, `text_b` (string [batch]; an empty text_b is a
    single-segment input, as in run_classifier).
Each returns `probabilities` (float32 [batch, num_labels]) and `label` (the
predicted label name, string [batch]), or for regression `score` (float32
[batch]). The text signatures tokenize and pack with tensorflow-text exactly as
run_classifier's features are made (`tokenization.in_graph.InGraphTokenizer`),
then cut to the batch's longest row. The vocabulary and label_list.json are
assets. Loading needs only `tensorflow` and `tensorflow_text` (for the WordPiece op).
"""

import functools
import os

import tensorflow as tf

from classification import labels as labels_lib
import fileio
from modeling import INPUT_NAMES
from tokenization.in_graph import InGraphTokenizer
from training import inputs

SIGNATURE_IDS = "serving_default"
SIGNATURE_TEXT = "serve_text"
SIGNATURE_TEXT_PAIR = "serve_text_pair"


# What marks a SavedModel of ours, beside saved_model.pb and variables/.
_MARKERS = (os.path.join("assets", labels_lib.LABEL_LIST_FILE),)


def check_export_dir(export_dir, output_dir, overwrite):
  """`fileio.check_export_dir` for run_classifier's SavedModels (see there)."""
  fileio.check_export_dir(export_dir, output_dir, overwrite, _MARKERS, "run_classifier")


def _one_row(features):
  """bool scalar tensor: the batch of `features` has one row."""
  return tf.equal(tf.shape(features["input_ids"])[0], 1)


class ClassifierModule(tf.Module):
  """The Keras classifier plus tokenizer, labels and the serving functions.

  A batch of one row runs the classifier as a function of its own under TensorFlow's
  single-threaded executor (`SINGLE_BATCH_EXECUTOR`): its ops run in the calling thread,
  without the default executor's hand-offs between threads, which at one row cost as much as
  the small kernels themselves (the matmuls' intra-op threads stay). Larger batches keep the
  default executor, whose inter-op threads run independent ops side by side. The executor is
  an attribute of the call op in the saved graph: any loader of the SavedModel gets it.

  With `xla_one_row`, a batch of one row runs the classifier XLA-compiled instead: its some
  1,200 small ops become a few fused kernels, and the matmuls too small for oneDNN to thread
  run on every intra-op thread (BENCHMARKS "Serving"). XLA compiles once per input shape, so
  the text signatures pad a one-row batch to a multiple of `XLA_LENGTH_MULTIPLE` tokens (at most
  max_seq_length / 8 compilations of about 2 s each on a 2-vCPU host, at a new length's first
  call). Off by default: TF Serving runs XLA-compiled functions only with
  `--xla_cpu_compilation_enabled=true`.
  """

  # TensorFlow's name for the executor of a one-row batch; None: inline, the default executor.
  SINGLE_BATCH_EXECUTOR = "SINGLE_THREADED_EXECUTOR"
  # With xla_one_row: a one-row batch's length is rounded up to a multiple of this.
  XLA_LENGTH_MULTIPLE = 8

  def __init__(self, model, vocab_file, do_lower_case, max_seq_length, label_list,
               is_regression, label_list_file, tokenizer=None, xla_one_row=False):
    """tokenizer: what the text signatures tokenize and pack with (`tokenize`, `pack` as
    `InGraphTokenizer`'s); default `InGraphTokenizer(vocab_file, do_lower_case)`.
    xla_one_row: a one-row batch runs XLA-compiled (see the class)."""
    super().__init__(name="bert_classifier")
    # The model's variables are saved, not the Keras model: saving a Keras model traces and
    # writes every layer's call functions, most of an export's time, which serving never reads.
    self.model_variables = list(model.variables)
    self._model = functools.partial(model, training=False)  # a partial: not tracked
    self.tokenizer = tokenizer or InGraphTokenizer(vocab_file, do_lower_case)
    self.vocab_file = tf.saved_model.Asset(vocab_file)
    self.label_list_file = tf.saved_model.Asset(label_list_file)
    self.max_seq_length = max_seq_length
    self.is_regression = is_regression
    self.labels = tf.constant(list(label_list or []), tf.string)
    seq = tf.TensorSpec([None, max_seq_length], tf.int32)
    text = tf.TensorSpec([None], tf.string)
    # Not inlined into the signatures: the call op keeps its executor.
    self._classify = tf.function(self._logits, experimental_attributes={"_noinline": True})
    self.xla_one_row = xla_one_row
    self._classify_xla = tf.function(self._logits, jit_compile=True) if xla_one_row else None
    self.serve_ids = tf.function(self._serve_ids, input_signature=[seq, seq, seq])
    self.serve_text = tf.function(self._serve_text, input_signature=[text])
    self.serve_text_pair = tf.function(self._serve_text_pair, input_signature=[text, text])

  def _logits(self, features):
    return tf.cast(self._model(features), tf.float32)  # [batch, num_labels]

  def _outputs(self, features):
    if not (self.SINGLE_BATCH_EXECUTOR or self.xla_one_row):
      return self._predictions(self._logits(features))

    def classify(executor):  # executor "": the default
      with tf.experimental.function_executor_type(executor):
        return self._classify(features)
    one_row = (lambda: self._classify_xla(features)) if self.xla_one_row else (
        lambda: classify(self.SINGLE_BATCH_EXECUTOR))
    logits = tf.cond(_one_row(features), one_row, lambda: classify(""))
    return self._predictions(logits)

  def _predictions(self, logits):
    if self.is_regression:
      return {"score": logits[:, 0]}
    return {"probabilities": tf.nn.softmax(logits, axis=-1),
            "label": tf.gather(self.labels, tf.argmax(logits, axis=-1))}

  def _serve_ids(self, input_ids, input_mask, segment_ids):
    return self._outputs({"input_ids": input_ids, "input_mask": input_mask,
                          "segment_ids": segment_ids})

  def _serve_packed(self, features):
    """Outputs of packed [batch, max_seq_length] features cut to the batch's longest row:
    a short request does not pay for max_seq_length. Exactly to the longest row (inference
    compiles no kernel per shape), but for the XLA-compiled one row: rounded up to
    XLA_LENGTH_MULTIPLE (at most max_seq_length)."""
    multiple = 1
    if self.xla_one_row:
      multiple = tf.where(_one_row(features), self.XLA_LENGTH_MULTIPLE, 1)
    return self._outputs(inputs.trim_padding(features, multiple, INPUT_NAMES))

  def _serve_text(self, text_a):
    return self._serve_packed(self.tokenizer.pack(self.tokenizer.tokenize(text_a), None,
                                                  self.max_seq_length))

  def _serve_text_pair(self, text_a, text_b):
    return self._serve_packed(self.tokenizer.pack(self.tokenizer.tokenize(text_a),
                                                  self.tokenizer.tokenize(text_b),
                                                  self.max_seq_length))


def export_saved_model(model, export_dir, vocab_file, do_lower_case, max_seq_length, label_list,
                       is_regression, xla_one_row=False):
  """Writes the SavedModel to `export_dir`, replacing it atomically (`fileio.atomic_directory`).

  `label_list` is the label names in id order (None for regression); `xla_one_row`: see
  `ClassifierModule`. Returns export_dir.
  """
  with (fileio.staging_directory(export_dir) as staging,
        fileio.atomic_directory(export_dir) as saved):
    # The label file is an asset: saving copies it into the SavedModel's assets/.
    label_file = labels_lib.save_label_list(staging, label_list or [], is_regression)
    module = ClassifierModule(model, vocab_file, do_lower_case, max_seq_length, label_list,
                              is_regression, label_file, xla_one_row=xla_one_row)
    tf.saved_model.save(module, saved, signatures=signatures(module))
  return export_dir


def signatures(module):
  """{signature name: function} of a ClassifierModule, for `tf.saved_model.save`."""
  return {SIGNATURE_IDS: module.serve_ids, SIGNATURE_TEXT: module.serve_text,
          SIGNATURE_TEXT_PAIR: module.serve_text_pair}
