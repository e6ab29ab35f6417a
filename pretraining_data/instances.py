"""Tokenized chunks and Google's sentence-pair instance logic, expressed as token spans.

A chunk's tokens live in one flat id array; sentences and documents are
offsets into it. Because A is consecutive sentences of one document and B is
consecutive sentences of one document, each (truncated) segment is a single
contiguous span of that array, so an instance is just four integers plus its
next-sentence label: no token lists are built here.
"""

import dataclasses
import itertools

import numpy as np


@dataclasses.dataclass(frozen=True)
class TokenizedChunk:
  """Documents of one chunk: `ids` [n_tokens] int32, `sentence_starts` [n_sentences + 1]
  offsets into ids, `doc_starts` [n_docs + 1] offsets into sentences."""
  ids: np.ndarray
  sentence_starts: np.ndarray
  doc_starts: np.ndarray

  @property
  def num_documents(self):
    return len(self.doc_starts) - 1

  @classmethod
  def from_pieces(cls, pieces):
    """Joins the (ids, sentence_lengths, doc_sentence_counts) of `tokenize_documents` calls."""
    ids = np.concatenate([p[0] for p in pieces]) if pieces else np.zeros(0, np.int32)
    sent_lens = np.concatenate([p[1] for p in pieces]) if pieces else np.zeros(0, np.int64)
    doc_counts = np.concatenate([p[2] for p in pieces]) if pieces else np.zeros(0, np.int64)
    sentence_starts = np.zeros(len(sent_lens) + 1, np.int64)
    np.cumsum(sent_lens, out=sentence_starts[1:])
    doc_starts = np.zeros(len(doc_counts) + 1, np.int64)
    np.cumsum(doc_counts, out=doc_starts[1:])
    return cls(ids.astype(np.int32, copy=False), sentence_starts, doc_starts)


class WordIds(dict):
  """word -> tuple of its WordPiece ids via `tokenizer`'s WordPiece step, memoised.

  FullTokenizer.tokenize(text) is WordPiece over the words of BasicTokenizer,
  one word at a time, so looking words up here gives the same ids while the
  per-word work runs in C (dict lookups under `map`) for every repeated word.
  """

  _LIMIT = 1_000_000  # words remembered; bounds memory on corpora with huge vocabularies

  def __init__(self, tokenizer):
    super().__init__()
    self._wordpiece = tokenizer.wordpiece_tokenizer.tokenize
    self._vocab = tokenizer.vocab

  def __missing__(self, word):
    ids = tuple(map(self._vocab.__getitem__, self._wordpiece(word)))
    if len(self) >= self._LIMIT:
      self.clear()
    self[word] = ids
    return ids


def tokenize_documents(tokenizer, word_ids, documents):
  """Documents (lists of lines) -> (ids int32, sentence lengths, sentences per doc, n_empty).

  `word_ids` is a `WordIds` of `tokenizer`. As in Google's script, a line that
  tokenizes to nothing is dropped and a document left without sentences is
  dropped (and counted in n_empty).
  """
  basic = tokenizer.basic_tokenizer.tokenize
  lookup, chain = word_ids.__getitem__, itertools.chain.from_iterable
  ids, sent_lens, doc_counts = [], [], []
  n_empty = 0
  for doc in documents:
    n_sent = 0
    for line in doc:
      before = len(ids)
      ids.extend(chain(map(lookup, basic(line))))
      if len(ids) > before:
        sent_lens.append(len(ids) - before)
        n_sent += 1
    if n_sent:
      doc_counts.append(n_sent)
    else:
      n_empty += 1
  return (np.asarray(ids, np.int32), np.asarray(sent_lens, np.int64),
          np.asarray(doc_counts, np.int64), n_empty)


@dataclasses.dataclass
class InstanceSpans:
  """Sentence pairs as spans of a chunk's ids; every field is an [n] int64 array."""
  a_start: np.ndarray
  a_len: np.ndarray
  b_start: np.ndarray
  b_len: np.ndarray
  is_random_next: np.ndarray
  short_target_docs: int = 0  # documents whose target length was drawn short


def _truncation(a_len, b_len, max_num_tokens):
  """How many tokens Google's loop removes from A and from B.

  It repeatedly removes one token from the longer segment (B on a tie): the
  longer one is cut down to the other's length, then the two alternate,
  starting with B.
  """
  excess = a_len + b_len - max_num_tokens
  if excess <= 0:
    return 0, 0
  if a_len > b_len:
    cut_a, cut_b = min(excess, a_len - b_len), 0
    excess -= cut_a
  else:
    cut_a, cut_b = 0, min(excess, b_len - a_len)
    excess -= cut_b
  return cut_a + excess // 2, cut_b + (excess + 1) // 2


def create_instance_spans(chunk, doc_indices, max_seq_length, short_seq_prob, rng):
  """Google's `create_instances_from_document` for each document in `doc_indices`.

  `rng` is a `random.Random`. Random-next B segments are drawn from the
  documents of `chunk` (Google draws from the whole corpus). Truncation draws
  how many of a segment's removed tokens come off its front as
  Binomial(removed, 1/2), which is the distribution of Google's one coin per
  removed token.
  """
  max_num_tokens = max_seq_length - 3
  starts = np.asarray(chunk.sentence_starts)
  doc_starts = np.asarray(chunk.doc_starts).tolist()
  n_docs = chunk.num_documents
  rand, randint, getrandbits = rng.random, rng.randint, rng.getrandbits
  a_start, a_len, b_start, b_len, is_random = [], [], [], [], []
  short_docs = 0
  for d in doc_indices:
    s0, s1 = doc_starts[d], doc_starts[d + 1]
    offs = starts[s0:s1 + 1].tolist()  # token offsets of this document's sentences
    n = s1 - s0
    target = max_num_tokens
    if rand() < short_seq_prob:
      target = randint(2, max_num_tokens)
      short_docs += 1
    first = 0  # first sentence of the current group
    i = 0
    while i < n:
      if i == n - 1 or offs[i + 1] - offs[first] >= target:
        k = i - first + 1
        a_end = first + (randint(1, k - 1) if k >= 2 else 1)
        sa, la = offs[first], offs[a_end] - offs[first]
        if k == 1 or rand() < 0.5:
          random_next = True
          target_b = target - la
          for _ in range(10):
            r = randint(0, n_docs - 1)
            if r != d:
              break
          r0, r1 = doc_starts[r], doc_starts[r + 1]
          j = r0 + randint(0, r1 - r0 - 1)
          sb = int(starts[j])
          # Sentences from j on until B reaches its target or the document ends.
          ends = starts[j + 1:r1 + 1]
          reach = int(np.searchsorted(ends, sb + target_b, side="left"))
          lb = int(ends[min(reach, len(ends) - 1)]) - sb
          i = a_end - 1  # put the unused sentences back
        else:
          random_next = False
          sb, lb = offs[a_end], offs[i + 1] - offs[a_end]
        cut_a, cut_b = _truncation(la, lb, max_num_tokens)
        if cut_a:
          sa += getrandbits(cut_a).bit_count()
          la -= cut_a
        if cut_b:
          sb += getrandbits(cut_b).bit_count()
          lb -= cut_b
        a_start.append(sa)
        a_len.append(la)
        b_start.append(sb)
        b_len.append(lb)
        is_random.append(random_next)
        first = i + 1
      i += 1
  as_array = lambda v: np.asarray(v, np.int64)
  return InstanceSpans(as_array(a_start), as_array(a_len), as_array(b_start), as_array(b_len),
                       as_array(is_random), short_docs)
