"""SavedModel export of a SQuAD model that answers questions on raw text, all in the graph.

Signatures:
  serve_qa: `question`, `context` (string [batch]) -> `answer` (string
    [batch]), `start`, `end` (int32 [batch]) and `score` (float32 [batch]);
    v2 models also give `null_score` (float32 [batch]) and `has_answer`
    (bool [batch]).
  serving_default: `input_ids`, `input_mask`, `segment_ids` (int32 [batch,
    max_seq_length]) -> `start_logits`, `end_logits` (float32, same shape).

serve_qa does run_squad's prediction for each (question, context) pair:
WordPiece ids as `FullTokenizer`'s (`tokenization.in_graph`), the question
cut to max_query_length, `[CLS] question [SEP] window [SEP]` over windows of
the context laid out as `squad.features` does, the model on every window, and
`squad.predictions`' search for the best span: the n_best_size best start and
end positions of each window, kept if both lie in the window's document part,
the start has its maximum context there and the span holds 1 to
max_answer_length pieces; the highest start + end logit wins, the first in
Google's candidate order on ties. Sums are taken in float64, as Google's
Python floats are.

`answer` is `context[start:end]`: `start` and `end` count Unicode code points
(characters of a Python str) of the context, `end` exclusive, from the first
character of the span's first piece to the last character of its last piece
(see `InGraphTokenizer.tokenize_with_offsets`). A context that is not valid
UTF-8 is first stripped of its invalid bytes, as run_squad's reader does, and
the offsets count the characters of what is left. `score` is the best span's
start + end logit. v2: `null_score` is the lowest [CLS] start + end logit over
the windows, and `has_answer` is False when null_score - score exceeds
null_score_diff_threshold, as Google decides "" (then `answer` is still the
best span, for the caller to use or not). When no span passes the filters
(a context without pieces), `answer` is "", `start` = `end` = 0, `score` is
-inf and `has_answer` False.

Where predictions.json differs: Google maps the span onto the context through
`get_final_text` on the span's whitespace-separated words joined by one
space. So (1) a span over words separated by other whitespace (two spaces,
a newline) reads with single spaces there; (2) where `get_final_text` gives
up (normalization changed a character count, as a deleted format character
or a combining accent does; [UNK] pieces), Google answers with the span's
whole words; (3) `get_final_text` takes the first match of the span's
normalized text in those words, which can lie before the span when the span
starts inside a word (a span on a word's "ī" reads as an "i" before it).
bench/squad_export_agreement.py measures how often.

Loading needs only `tensorflow` and `tensorflow_text`. The assets are the
vocabulary and squad_export.json (the settings above), which also marks the
directory as ours for `check_export_dir`.
"""

import collections
import functools
import json
import os

import tensorflow as tf

import fileio
from tokenization.in_graph import InGraphTokenizer, drop_invalid_utf8

SIGNATURE_IDS = "serving_default"
SIGNATURE_QA = "serve_qa"
SETTINGS_FILE = "squad_export.json"

_MARKERS = (os.path.join("assets", SETTINGS_FILE),)


def check_export_dir(export_dir, output_dir, overwrite):
  """`fileio.check_export_dir` for run_squad's SavedModels (see there)."""
  fileio.check_export_dir(export_dir, output_dir, overwrite, _MARKERS, "run_squad")


class QaModule(tf.Module):
  """The Keras SQuAD model plus tokenizer and the serving functions."""

  def __init__(self, model, vocab_file, settings_file, settings):
    super().__init__(name="bert_squad")
    # Its variables, not the Keras model (as `classification.export.ClassifierModule`).
    self.model_variables = list(model.variables)
    self._model = functools.partial(model, training=False)  # a partial: not tracked
    self.tokenizer = InGraphTokenizer(vocab_file, settings["do_lower_case"])
    self.vocab_file = tf.saved_model.Asset(vocab_file)
    self.settings_file = tf.saved_model.Asset(settings_file)
    self.settings = dict(settings)
    seq = tf.TensorSpec([None, settings["max_seq_length"]], tf.int32)
    text = tf.TensorSpec([None], tf.string)
    # No Python control flow depends on tensors here, so autograph is not needed.
    self.serve_ids = tf.function(self._serve_ids, input_signature=[seq, seq, seq],
                                 autograph=False)
    self.serve_qa = tf.function(self._serve_qa, input_signature=[text, text], autograph=False)

  def _logits(self, features):
    outputs = self._model(features)
    return {k: tf.cast(outputs[k], tf.float32) for k in ("start_logits", "end_logits")}

  def _serve_ids(self, input_ids, input_mask, segment_ids):
    return self._logits({"input_ids": input_ids, "input_mask": input_mask,
                         "segment_ids": segment_ids})

  def _serve_qa(self, question, context):
    s = self.settings
    context = drop_invalid_utf8(context)
    query = self.tokenizer.tokenize(question)[:, :s["max_query_length"]]  # [batch, (query)]
    doc, char_starts, char_ends = self.tokenizer.tokenize_with_offsets(context)
    windows = _Windows(query.row_lengths(), doc.row_lengths(), s["max_seq_length"],
                       s["doc_stride"])
    logits = self._logits(windows.model_inputs(query, doc, self.tokenizer.cls_id,
                                               self.tokenizer.sep_id))
    span = windows.best_spans(logits["start_logits"], logits["end_logits"], s["n_best_size"],
                              s["max_answer_length"])
    # The pieces' character offsets, flattened, plus a 0 for examples without a span.
    none = tf.size(doc.flat_values, tf.int64)
    zero = tf.zeros([1], tf.int64)
    start = tf.gather(tf.concat([char_starts.flat_values, zero], 0),
                      tf.where(span.found, span.start_piece, none))
    end = tf.gather(tf.concat([char_ends.flat_values, zero], 0),
                    tf.where(span.found, span.end_piece, none))
    score = tf.where(span.found, span.start_logit + span.end_logit, -float("inf"))
    outputs = {"answer": tf.strings.substr(context, start, end - start, unit="UTF8_CHAR"),
               "start": tf.cast(start, tf.int32), "end": tf.cast(end, tf.int32),
               "score": tf.cast(score, tf.float32)}
    if s["version_2_with_negative"]:
      null_score = windows.null_scores(logits["start_logits"], logits["end_logits"])
      # Google's order of operations: score_null - start_logit - end_logit.
      score_diff = null_score - span.start_logit - span.end_logit
      outputs["null_score"] = tf.cast(null_score, tf.float32)
      outputs["has_answer"] = tf.logical_and(
          span.found, tf.logical_not(score_diff > s["null_score_diff_threshold"]))
    return outputs


_Span = collections.namedtuple("_Span", ["found", "start_piece", "end_piece", "start_logit",
                                         "end_logit"])
_Span.__doc__ = """The best span of each example, [batch] each: whether there is one (bool),
its first and last pieces (int64 indices into the batch's flattened document pieces), their
logits (float64)."""


class _Windows:
  """Google's document windows of every example, flattened over the batch in example order.

  Every non-final window holds max_seq_length - len(query) - 3 pieces, the
  next starting min(that, doc_stride) later, until one reaches the end of the
  document. A document without pieces gets one empty window (Google's code
  makes none), so that every example has a null score.
  """

  def __init__(self, query_lengths, doc_lengths, max_seq_length, doc_stride):
    self.max_seq_length = max_seq_length
    self.batch = tf.size(doc_lengths, tf.int64)
    capacity = max_seq_length - query_lengths - 3  # [batch]
    stride = tf.minimum(capacity, doc_stride)
    # ceil((doc - capacity) / stride) windows after the first.
    counts = 1 + tf.maximum(-((capacity - doc_lengths) // stride), 0)  # [batch]
    self.example = tf.repeat(tf.range(self.batch), counts)  # [windows]
    index = tf.ragged.range(counts).flat_values  # [windows]: the window's index in its example
    self.start = index * tf.gather(stride, self.example)
    self.length = tf.minimum(tf.gather(capacity, self.example),
                             tf.gather(doc_lengths, self.example) - self.start)
    self.offset = tf.gather(query_lengths, self.example) + 2  # position of the first doc piece
    # The windows' pieces as indices into the batch's flattened document pieces.
    self.first_piece = tf.gather(tf.cumsum(doc_lengths, exclusive=True), self.example) + self.start
    self.pieces = tf.ragged.range(self.first_piece, self.first_piece + self.length)
    self.max_context = self._max_context(tf.reduce_sum(doc_lengths))

  def _max_context(self, num_pieces):
    """Whether each window is its pieces' max-context window: bool [windows, (length)].

    Google's score of a piece in a window is min(left context, right context)
    + 0.01 * window length (float64); the first window with the highest wins.
    """
    local = tf.ragged.range(self.length).flat_values  # [window pieces]
    window = self.pieces.value_rowids()  # [window pieces]
    length = tf.gather(self.length, window)
    score = (tf.cast(tf.minimum(local, length - 1 - local), tf.float64)
             + 0.01 * tf.cast(length, tf.float64))
    piece = self.pieces.flat_values
    best = tf.math.unsorted_segment_max(score, piece, num_pieces)
    first = tf.math.unsorted_segment_min(
        tf.where(score == tf.gather(best, piece), window, tf.int64.max), piece, num_pieces)
    return self.pieces.with_flat_values(tf.gather(first, piece) == window)

  def model_inputs(self, query, doc, cls_id, sep_id):
    """`[CLS] query [SEP] window [SEP]` of every window, zero-padded: int32 [windows, seq]."""
    query = tf.gather(query, self.example)  # [windows, (query)]
    window = self.pieces.with_flat_values(tf.gather(doc.flat_values, self.pieces.flat_values))
    cls = tf.fill([tf.size(self.example), 1], tf.constant(cls_id, tf.int32))
    sep = tf.fill([tf.size(self.example), 1], tf.constant(sep_id, tf.int32))
    ids = tf.concat([cls, query, sep, window, sep], axis=1)  # [windows, (tokens)]
    segments = tf.concat([tf.zeros_like(cls), tf.zeros_like(query), tf.zeros_like(sep),
                          tf.ones_like(window), tf.ones_like(sep)], axis=1)
    shape = [None, self.max_seq_length]
    return {"input_ids": ids.to_tensor(0, shape=shape),
            "input_mask": tf.ones_like(ids).to_tensor(0, shape=shape),
            "segment_ids": segments.to_tensor(0, shape=shape)}

  def best_spans(self, start_logits, end_logits, n_best_size, max_answer_length):
    """Google's best span of each example from the windows' logits (float32 [windows, seq])."""
    k = min(n_best_size, self.max_seq_length)
    top_start = tf.math.top_k(start_logits, k)  # lower position first on ties, as Google
    top_end = tf.math.top_k(end_logits, k)
    start = tf.cast(top_start.indices, tf.int64) - self.offset[:, None]  # [windows, k] in window
    end = tf.cast(top_end.indices, tf.int64) - self.offset[:, None]
    length = self.length[:, None]
    # The max-context flags, flattened, plus one False for positions outside the window.
    flags = tf.concat([self.max_context.flat_values, [False]], 0)
    in_window = (start >= 0) & (start < length)
    start_ok = in_window & tf.gather(flags, tf.where(
        in_window, self.max_context.row_starts()[:, None] + start, tf.size(flags, tf.int64) - 1))
    end_ok = (end >= 0) & (end < length)
    pair_ok = (start_ok[:, :, None] & end_ok[:, None, :] & (end[:, None, :] >= start[:, :, None])
               & (end[:, None, :] - start[:, :, None] < max_answer_length))  # [windows, k, k]
    start_logit = tf.cast(top_start.values, tf.float64)
    end_logit = tf.cast(top_end.values, tf.float64)
    score = tf.where(pair_ok, start_logit[:, :, None] + end_logit[:, None, :], -float("inf"))
    score = tf.reshape(score, [-1, k * k])  # [windows, k * k] in Google's candidate order
    found = tf.math.unsorted_segment_max(tf.cast(tf.reduce_any(pair_ok, [1, 2]), tf.int32),
                                         self.example, self.batch) > 0  # [batch]
    best = tf.math.unsorted_segment_max(tf.reduce_max(score, 1), self.example, self.batch)
    # Ties: the first candidate in window, start-rank, end-rank order (Google's stable sort).
    candidate = (tf.range(tf.size(self.example, tf.int64))[:, None] * k * k
                 + tf.range(k * k, dtype=tf.int64)[None, :])
    first = tf.math.unsorted_segment_min(
        tf.reduce_min(tf.where(score == tf.gather(best, self.example)[:, None], candidate,
                               tf.int64.max), 1), self.example, self.batch)  # [batch]
    first = tf.where(found, first, 0)  # any candidate, for the gathers below
    window, rank = first // (k * k), first % (k * k)
    start_rank = tf.stack([window, rank // k], 1)
    end_rank = tf.stack([window, rank % k], 1)
    first_piece = tf.gather(self.first_piece, window)
    return _Span(found=found,
                 start_piece=first_piece + tf.gather_nd(start, start_rank),
                 end_piece=first_piece + tf.gather_nd(end, end_rank),
                 start_logit=tf.gather_nd(start_logit, start_rank),
                 end_logit=tf.gather_nd(end_logit, end_rank))

  def null_scores(self, start_logits, end_logits):
    """The lowest [CLS] start + end logit over each example's windows: float64 [batch]."""
    null = tf.cast(start_logits[:, 0], tf.float64) + tf.cast(end_logits[:, 0], tf.float64)
    return tf.math.unsorted_segment_min(null, self.example, self.batch)


def export_saved_model(model, export_dir, vocab_file, do_lower_case, max_seq_length, doc_stride,
                       max_query_length, max_answer_length, version_2_with_negative=False,
                       null_score_diff_threshold=0.0, n_best_size=20):
  """Writes the SavedModel of `model` (`modeling.build_squad_model`) to `export_dir`.

  The directory is replaced atomically (`fileio.atomic_directory`). The
  settings are run_squad's flags of the same names. Returns export_dir.
  """
  settings = dict(do_lower_case=do_lower_case, max_seq_length=max_seq_length,
                  doc_stride=doc_stride, max_query_length=max_query_length,
                  max_answer_length=max_answer_length, n_best_size=n_best_size,
                  version_2_with_negative=version_2_with_negative,
                  null_score_diff_threshold=null_score_diff_threshold)
  with (fileio.staging_directory(export_dir) as staging,
        fileio.atomic_directory(export_dir) as saved):
    # The settings file is an asset: saving copies it into the SavedModel's assets/.
    settings_file = os.path.join(staging, SETTINGS_FILE)
    with open(settings_file, "w", encoding="utf-8") as f:
      json.dump(settings, f, indent=2)
    module = QaModule(model, vocab_file, settings_file, settings)
    tf.saved_model.save(module, saved, signatures={SIGNATURE_IDS: module.serve_ids,
                                                   SIGNATURE_QA: module.serve_qa})
  return export_dir
