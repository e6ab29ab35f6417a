"""Tokenized chunks and Google's sentence-pair instance logic, expressed as token spans.

A chunk's tokens live in one flat id array; sentences and documents are
offsets into it. Because A is consecutive sentences of one document and B is
consecutive sentences of one document, each (truncated) segment is a single
contiguous span of that array, so an instance is just four integers plus its
next-sentence label: no token lists are built here.
"""

import array
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


# Bytes that Google's cleaning step drops: ASCII control characters except tab, LF and CR.
_ASCII_CONTROLS = bytes(c for c in (*range(32), 127) if c not in b"\t\n\r")
# A line end inside a batch: LF once cleaned (a control character, so none is left in the text).
_LINE_END = b"\x01"
# ASCII punctuation that is cut off the pieces of a batch beforehand: the common ones, so that
# "word," and "word." share the memo entry of "word". (Any other character stays in its piece,
# which the tokenizer then splits exactly.)
_PRESPLIT = tuple(bytes([c]) for c in b",.;:!?\"'()-")
# Lower-cased as the last letter of a word or not, depending on its neighbours (Python's rule,
# which Google's lower() follows): where it occurs, pieces keep their punctuation.
_CAPITAL_SIGMA = "\u03a3".encode()


class WordIds(dict):
  """FullTokenizer's ids of many lines at once, memoised per whitespace-separated piece.

  Google's tokenizer cleans characters one by one (drops control characters,
  turns whitespace into spaces), splits on whitespace and then tokenizes every
  piece on its own (lower-casing, accent stripping, punctuation split,
  WordPiece). So `ids_of_text` cleans the ASCII of a whole batch of lines in
  C (`bytes.translate` over their UTF-8), splits it into pieces, and looks each
  piece up here: a repeated piece costs one dict hit under `map`; the first
  sight of a piece runs `FullTokenizer.tokenize` on it (just WordPiece for
  ASCII letters and digits), which handles everything non-ASCII (accents, CJK,
  Unicode whitespace and punctuation, control characters) exactly as per line.

  Common ASCII punctuation is cut off the pieces first (each such character is
  always a token of its own), so that "word," hits the entry of "word" --
  except where a capital sigma occurs with lower-casing, whose lower case
  depends on the letters around it, across punctuation.

  A value is one id (>= 0), `_LINE_END_ID`, or -2 - k for entry k of a table
  of id runs (the ids of a piece that does not map to exactly one id).
  """

  _LIMIT = 1_000_000  # pieces remembered; bounds memory on corpora with huge vocabularies
  _LINE_END_ID = -1

  def __init__(self, tokenizer):
    super().__init__()
    self.tokenizer = tokenizer
    self._tokenize = tokenizer.tokenize
    self._split_word = tokenizer.wordpiece_tokenizer.split_word
    self._vocab = tokenizer.vocab
    self._lower = tokenizer.basic_tokenizer.do_lower_case
    # Cleaning of ASCII (and, when lower-casing, A-Z -> a-z): tab and CR become spaces and
    # LF the line-end mark; _ASCII_CONTROLS are deleted.
    table = bytearray(range(256))
    table[ord("\t")] = table[ord("\r")] = ord(" ")
    table[ord("\n")] = _LINE_END[0]
    if self._lower:
      table[ord("A"):ord("Z") + 1] = bytes(range(ord("a"), ord("z") + 1))
    self._table = bytes(table)
    # Every vocabulary word of ASCII letters and digits (lower-case when lower-casing) is its
    # own WordPiece tokenization: known without a first sight.
    wordpiece = tokenizer.wordpiece_tokenizer
    self._known = {
        token.encode(): i for token, i in self._vocab.items()
        if token.isascii() and token.isalnum() and len(token) <= wordpiece.max_input_chars_per_word
        and not (self._lower and token != token.lower())}
    self._reset()

  def _reset(self):
    self.clear()
    self.update(self._known)
    self[_LINE_END] = self._LINE_END_ID
    self._run_ids = array.array("i")  # the id runs, end to end
    self._run_starts = array.array("q")
    self._run_lengths = array.array("q")

  def __missing__(self, piece):
    if piece.isalnum():  # ASCII letters and digits: one word, already cleaned and lower-cased
      tokens = self._split_word(piece.decode())
    else:
      tokens = self._tokenize(piece.decode("utf-8", "surrogatepass"))
    if len(tokens) == 1:
      value = self._vocab[tokens[0]]
    else:
      value = -2 - len(self._run_starts)
      self._run_starts.append(len(self._run_ids))
      self._run_lengths.append(len(tokens))
      self._run_ids.extend(map(self._vocab.__getitem__, tokens))
    self[piece] = value
    return value

  def ids_of_lines(self, lines):
    """The ids of `lines` (str), end to end, and each line's number of ids:
    (ids [n_ids] int32, lengths [len(lines)] int64), as FullTokenizer gives them."""
    return self.ids_of_text(_join_lines(lines), len(lines))

  def ids_of_text(self, text, n_lines):
    """`ids_of_lines` of the `n_lines` lines that `_join_lines` joined into `text`."""
    if not n_lines:
      return np.zeros(0, np.int32), np.zeros(0, np.int64)
    if len(self) >= self._LIMIT:  # between batches: the codes of a batch stay valid
      self._reset()
    data = text.translate(self._table, _ASCII_CONTROLS)
    if not (self._lower and _CAPITAL_SIGMA in data):
      for p in _PRESPLIT:
        if p in data:
          data = data.replace(p, b" " + p + b" ")
    pieces = data.split()
    pieces.append(_LINE_END)
    codes = np.fromiter(map(self.__getitem__, pieces), np.int32, len(pieces))
    # Expand the codes: [n_pieces] -> ids [n_ids]; line ends take no place.
    is_run = codes < self._LINE_END_ID
    run = -2 - codes[is_run]
    run_lengths = np.frombuffer(self._run_lengths, np.int64)[run]
    sizes = (codes >= 0).astype(np.int64)
    sizes[is_run] = run_lengths
    ends = np.cumsum(sizes)
    ids = np.repeat(codes, sizes)
    # Piece j of each run: ids[start of its piece + j] = run_ids[start of the run + j].
    within = np.arange(int(run_lengths.sum())) - np.repeat(
        np.cumsum(run_lengths) - run_lengths, run_lengths)
    ids[np.repeat(ends[is_run] - run_lengths, run_lengths) + within] = np.frombuffer(
        self._run_ids, np.int32)[np.repeat(np.frombuffer(self._run_starts, np.int64)[run],
                                           run_lengths) + within]
    return ids, np.diff(ends[codes == self._LINE_END_ID], prepend=0)


def _join_lines(lines):
  """`lines` (str) as one UTF-8 text, joined by " \n " (an LF inside a line becomes a space:
  it is whitespace to Google's tokenizer too)."""
  text = " \n ".join(lines)
  if text.count("\n") != len(lines) - 1:  # a line holding LF: it is whitespace to Google
    text = " \n ".join(line.replace("\n", " ") for line in lines)
  return text.encode("utf-8", "surrogatepass")


@dataclasses.dataclass(frozen=True)
class PackedDocuments:
  """Documents (lists of lines) as one UTF-8 text and the lines per document: one bytes object
  to send to a worker process instead of a str per line."""
  text: bytes
  lines_per_doc: np.ndarray  # [n_docs] int64

  @classmethod
  def pack(cls, documents):
    documents = list(documents)
    return cls(_join_lines(list(itertools.chain.from_iterable(documents))),
               np.fromiter(map(len, documents), np.int64, len(documents)))


def tokenize_documents(tokenizer, word_ids, documents):
  """Documents (lists of lines, or PackedDocuments) -> (ids int32, sentence lengths,
  sentences per doc, n_empty).

  `word_ids` is a `WordIds` of `tokenizer`. As in Google's script, a line that
  tokenizes to nothing is dropped and a document left without sentences is
  dropped (and counted in n_empty).
  """
  if word_ids.tokenizer is not tokenizer:
    raise ValueError("word_ids was made for another tokenizer")
  if not isinstance(documents, PackedDocuments):
    documents = PackedDocuments.pack(documents)
  lines_per_doc = documents.lines_per_doc
  ids, line_lengths = word_ids.ids_of_text(documents.text, int(lines_per_doc.sum()))
  kept = line_lengths > 0
  kept_before = np.zeros(len(kept) + 1, np.int64)  # [n_lines + 1]
  np.cumsum(kept, out=kept_before[1:])
  doc_ends = np.cumsum(lines_per_doc)
  sentences = kept_before[doc_ends] - kept_before[doc_ends - lines_per_doc]
  return (ids, line_lengths[kept], sentences[sentences > 0],
          int(np.count_nonzero(sentences == 0)))


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


def _randint(getrandbits, a, b):
  """`random.Random.randint(a, b)` (a <= b) from the same bits of `getrandbits`, the Random's
  method: the draw of CPython's `_randbelow` without `randrange`'s argument checks, which
  cost more than the draw itself."""
  n = b - a + 1
  k = n.bit_length()
  r = getrandbits(k)
  while r >= n:
    r = getrandbits(k)
  return a + r


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
  rand, getrandbits = rng.random, rng.getrandbits
  a_start, a_len, b_start, b_len, is_random = [], [], [], [], []
  short_docs = 0
  for d in doc_indices:
    s0, s1 = doc_starts[d], doc_starts[d + 1]
    offs = starts[s0:s1 + 1].tolist()  # token offsets of this document's sentences
    n = s1 - s0
    target = max_num_tokens
    if rand() < short_seq_prob:
      target = _randint(getrandbits, 2, max_num_tokens)
      short_docs += 1
    first = 0  # first sentence of the current group
    i = 0
    while i < n:
      if i == n - 1 or offs[i + 1] - offs[first] >= target:
        k = i - first + 1
        a_end = first + (_randint(getrandbits, 1, k - 1) if k >= 2 else 1)
        sa, la = offs[first], offs[a_end] - offs[first]
        if k == 1 or rand() < 0.5:
          random_next = True
          target_b = target - la
          for _ in range(10):
            r = _randint(getrandbits, 0, n_docs - 1)
            if r != d:
              break
          r0, r1 = doc_starts[r], doc_starts[r + 1]
          j = r0 + _randint(getrandbits, 0, r1 - r0 - 1)
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
