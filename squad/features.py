"""SquadExamples -> windowed model inputs, exactly as Google's `convert_examples_to_features`.

Each example becomes one feature per document window: `[CLS] query [SEP]
window [SEP]`, zero-padded to max_seq_length. The output equals Google's field
for field (also checked on whole dev files by bench/squad_features.py); the
work is organised differently, and faster (bench/squad_features.py compares):
- a paragraph's context is tokenized once and shared by its questions (they
  are consecutive in the reader's output and share one `doc_tokens` list),
  and each distinct word is tokenized once per call;
- the window layout and max-context flags depend only on (document length,
  window length, stride), so they are computed once per layout, in one pass
  that keeps each piece's best window so far, where Google scores every window
  for every piece of every window;
- `_improve_answer_span` compares token lists of the answer's length instead
  of joining every candidate sub-span into a string.
"""

import dataclasses

from absl import logging
import numpy as np

_FIRST_UNIQUE_ID = 1000000000


@dataclasses.dataclass
class InputFeatures:
  """One window of one example, with Google's field names.

  `tokens` is unpadded; `input_ids`/`input_mask`/`segment_ids` are padded to
  max_seq_length. `token_to_orig_map` ({position in tokens: word index in
  doc_tokens}) and `token_is_max_context` ({position: bool}) cover the window's
  tokens only. The labels (positions in `tokens`) are set only when training:
  0/0 when the window does not hold the whole answer or the question is
  unanswerable.
  """
  unique_id: int
  example_index: int
  doc_span_index: int
  tokens: list
  token_to_orig_map: dict
  token_is_max_context: dict
  input_ids: list
  input_mask: list
  segment_ids: list
  start_position: int | None = None
  end_position: int | None = None
  is_impossible: bool | None = None


@dataclasses.dataclass
class _Document:
  """A context as WordPieces: `pieces`/`ids` [n], `tok_to_orig` [n], `orig_to_tok` [words]."""
  pieces: list
  ids: list
  tok_to_orig: list
  orig_to_tok: list


def convert_examples_to_features(examples, tokenizer, max_seq_length, doc_stride,
                                 max_query_length, is_training):
  """All features of `examples`, in Google's order; see `generate_features`."""
  return list(generate_features(examples, tokenizer, max_seq_length, doc_stride,
                                max_query_length, is_training))


def generate_features(examples, tokenizer, max_seq_length, doc_stride, max_query_length,
                      is_training):
  """Yields the InputFeatures of `examples` one by one (Google's `output_fn` stream).

  Streaming keeps memory flat on the SQuAD training set, whose features take
  gigabytes as Python objects. `unique_id` runs from 1000000000 across the call.
  """
  if max_seq_length <= max_query_length + 3:
    raise ValueError(f"max_seq_length ({max_seq_length}) must be greater than "
                     f"max_query_length ({max_query_length}) + 3")
  if doc_stride < 1:
    raise ValueError(f"doc_stride must be positive, got {doc_stride}")
  word_pieces = _WordPieceCache(tokenizer)
  layouts = {}  # (document length, window length) -> _windows(...)
  cls_id, sep_id = tokenizer.convert_tokens_to_ids(["[CLS]", "[SEP]"])
  unique_id = _FIRST_UNIQUE_ID
  doc_tokens, doc = None, None
  for example_index, example in enumerate(examples):
    if example.doc_tokens is not doc_tokens:
      doc_tokens = example.doc_tokens
      doc = word_pieces.document(doc_tokens)
    query = tokenizer.tokenize(example.question_text)[:max_query_length]
    head_tokens = ["[CLS]"] + query + ["[SEP]"]
    head_ids = [cls_id] + tokenizer.convert_tokens_to_ids(query) + [sep_id]
    offset = len(head_tokens)  # position of the window's first token
    labelled = is_training and not example.is_impossible
    if labelled:
      answer_start, answer_end = _answer_span(example, doc, tokenizer)
    layout = (len(doc.pieces), max_seq_length - offset - 1)
    windows = layouts.get(layout)
    if windows is None:
      windows = layouts[layout] = _windows(*layout, doc_stride)
    for doc_span_index, (start, length, is_max_context) in enumerate(windows):
      end = start + length
      padding = [0] * (max_seq_length - offset - length - 1)
      positions = range(offset, offset + length)
      feature = InputFeatures(
          unique_id=unique_id,
          example_index=example_index,
          doc_span_index=doc_span_index,
          tokens=head_tokens + doc.pieces[start:end] + ["[SEP]"],
          token_to_orig_map=dict(zip(positions, doc.tok_to_orig[start:end])),
          token_is_max_context=dict(zip(positions, is_max_context)),
          input_ids=head_ids + doc.ids[start:end] + [sep_id] + padding,
          input_mask=[1] * (offset + length + 1) + padding,
          segment_ids=[0] * offset + [1] * (length + 1) + padding)
      if is_training:
        feature.is_impossible = example.is_impossible
        feature.start_position = feature.end_position = 0
        if labelled and start <= answer_start and answer_end < end:
          feature.start_position = answer_start - start + offset
          feature.end_position = answer_end - start + offset
      yield feature
      unique_id += 1
    if (example_index + 1) % 10000 == 0:
      logging.info("Converted %d examples into %d features", example_index + 1,
                   unique_id - _FIRST_UNIQUE_ID)


class _WordPieceCache:
  """Tokenizes contexts word by word as Google does, each distinct word once."""

  def __init__(self, tokenizer):
    self._tokenizer = tokenizer
    self._words = {}  # word -> (pieces, ids)

  def document(self, doc_tokens):
    pieces, ids, tok_to_orig, orig_to_tok = [], [], [], []
    for i, word in enumerate(doc_tokens):
      entry = self._words.get(word)
      if entry is None:
        word_pieces = self._tokenizer.tokenize(word)
        entry = (word_pieces, self._tokenizer.convert_tokens_to_ids(word_pieces))
        self._words[word] = entry
      orig_to_tok.append(len(pieces))
      pieces += entry[0]
      ids += entry[1]
      tok_to_orig += [i] * len(entry[0])
    return _Document(pieces, ids, tok_to_orig, orig_to_tok)


def _answer_span(example, doc, tokenizer):
  """The answer's WordPiece span [start, end] in the document, after Google's improvement."""
  start = doc.orig_to_tok[example.start_position]
  if example.end_position < len(example.doc_tokens) - 1:
    end = doc.orig_to_tok[example.end_position + 1] - 1
  else:
    end = len(doc.pieces) - 1
  return _improve_answer_span(doc.pieces, start, end, tokenizer, example.orig_answer_text)


def _improve_answer_span(doc_pieces, start, end, tokenizer, orig_answer_text):
  """Narrows [start, end] to the first sub-span whose pieces are the answer's own pieces.

  Word-level spans can hold more than the answer ("$5.2bn," for "5.2"), so
  Google searches sub-spans by start, then by end from the longest, for one
  whose space-joined pieces equal the tokenized answer. Pieces hold no spaces,
  so that is list equality, and only sub-spans of the answer's length can match.
  """
  answer = tokenizer.tokenize(orig_answer_text)
  if answer:
    for new_start in range(start, end - len(answer) + 2):
      if doc_pieces[new_start:new_start + len(answer)] == answer:
        return new_start, new_start + len(answer) - 1
  return start, end


def _windows(num_pieces, max_tokens_for_doc, doc_stride):
  """Google's doc spans and their max-context flags: [(start, length, [bool] * length)].

  Windows of up to max_tokens_for_doc pieces start min(length, doc_stride)
  apart until one reaches the end. A piece's max-context window is the one
  with the highest min(left context, right context) + 0.01 * window length, the
  first on ties; one pass over the windows keeps the best so far per piece.
  """
  spans = []
  start = 0
  while start < num_pieces:
    length = min(num_pieces - start, max_tokens_for_doc)
    spans.append((start, length))
    if start + length == num_pieces:
      break
    start += min(length, doc_stride)
  best_score = np.full(num_pieces, -1.0)
  best_span = np.zeros(num_pieces, np.int64)
  for index, (start, length) in enumerate(spans):
    left = np.arange(length)
    score = np.minimum(left, length - 1 - left) + 0.01 * length  # Google's float64 formula
    window = slice(start, start + length)
    better = score > best_score[window]
    best_score[window] = np.where(better, score, best_score[window])
    best_span[window] = np.where(better, index, best_span[window])
  return [(start, length, (best_span[start:start + length] == index).tolist())
          for index, (start, length) in enumerate(spans)]
