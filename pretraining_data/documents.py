"""Input side: stream documents line by line and group them into bounded chunks.

Format (Google's): one sentence per line, blank lines between documents. Lines
are stripped as Google strips them. Unlike Google's reader, the end of a file
also ends a document (Google's would glue the last document of one file to the
first of the next when a file does not end with a blank line), and a line that
is not valid UTF-8 is skipped and counted (or, with `strict`, is an error). A
file with more such lines than good ones is not text (binary, compressed, in
another encoding) and is an error. Lines far longer than an instance (a whole
document on one line?) are counted, with a warning naming the first of each file.
Lines holding NUL bytes are counted too: the tokenizer drops NULs, as Google's does.
"""

import dataclasses

from absl import logging

from fileio import InputError, open_file

# A file is refused once this many of its lines, and more than half, are not UTF-8.
MIN_BAD_LINES = 100


def long_line_chars(max_seq_length):
  """The length from which a line is mostly dropped: an instance takes at most max_seq_length
  tokens of one sentence, and this is ~10 times that at ~5 characters a token."""
  return 50 * max_seq_length


@dataclasses.dataclass
class ReadStats:
  """What the reader saw: counted so the summary can report what was skipped.

  long_line_chars: lines longer than this are counted in `long_lines` (None: not checked).
  """
  long_line_chars: int = None
  bytes_read: int = 0
  lines: int = 0
  documents: int = 0
  bad_utf8_lines: int = 0
  long_lines: int = 0
  nul_lines: int = 0


def _not_text(path, lines, bad):
  return InputError(f"{path}: {bad:,} of its first {lines:,} lines are not valid UTF-8: not a "
                    "UTF-8 text file (binary? compressed? another encoding?); convert it to "
                    "UTF-8 text or leave it out of --input_file")


def read_documents(files, stats, strict=False, open_binary=None):
  """Yields (document, n_bytes): a document is a list of non-blank stripped lines.

  Streams: only the current document is held. `stats` is updated in place (its line and
  byte counts at each document and at the end of each file: kept in locals in between,
  as this loop runs once per line of the corpus).
  `open_binary(path)` opens a file for reading bytes (default: `fileio.open_file`).
  """
  limit = stats.long_line_chars or float("inf")
  for path in files:
    doc, doc_bytes = [], 0
    line_no = counted_lines = read = bad = long = 0
    with (open_binary(path) if open_binary else open_file(path, "rb")) as f:
      for line_no, raw in enumerate(f, start=1):
        size = len(raw)
        read += size
        try:
          line = raw.decode("utf-8").strip()
        except UnicodeDecodeError as e:
          if strict:
            raise InputError(f"{path}:{line_no}: line is not valid UTF-8 ({e.reason} at byte "
                             f"{e.start}); drop --strict to skip such lines") from None
          stats.bad_utf8_lines += 1
          bad += 1
          if bad >= MIN_BAD_LINES and 2 * bad > line_no:
            raise _not_text(path, line_no, bad) from None
          continue
        if "\x00" in line:
          stats.nul_lines += 1
        if len(line) > limit:
          stats.long_lines += 1
          long += 1
          if long == 1:
            logging.warning(
                "%s:%d: a line of %s characters: each line is read as one sentence, and an "
                "instance takes at most --max_seq_length tokens of a sentence, so most of it is "
                "dropped. Put one sentence per line (lines over %s characters are counted in "
                "the summary).", path, line_no, f"{len(line):,}", f"{stats.long_line_chars:,}")
        if line:
          doc.append(line)
          doc_bytes += size
        elif doc:
          stats.lines += line_no - counted_lines
          stats.bytes_read += read
          counted_lines, read = line_no, 0
          stats.documents += 1
          yield doc, doc_bytes
          doc, doc_bytes = [], 0
    stats.lines += line_no - counted_lines
    stats.bytes_read += read
    if 2 * bad > line_no:
      raise _not_text(path, line_no, bad)
    if doc:
      stats.documents += 1
      yield doc, doc_bytes


class Chunker:
  """Cuts a stream of (document, n_bytes) into chunks of about `chunk_bytes` text.

  `next_chunk()` yields one chunk as consecutive slices of about `slice_bytes`
  (the tokenisation tasks), lazily, so workers start on a chunk while it is
  still being read. A document is never split; a chunk closes once it holds at
  least `chunk_bytes`, so it exceeds that by less than one document.
  """

  def __init__(self, docs, chunk_bytes, slice_bytes):
    self._docs = iter(docs)
    self.chunk_bytes, self.slice_bytes = chunk_bytes, slice_bytes
    self.exhausted = False
    self.last_chunk_bytes = 0  # text bytes of the chunk last delivered

  def next_chunk(self):
    chunk_size = slice_size = 0
    piece = []
    for doc, n_bytes in self._docs:
      piece.append(doc)
      chunk_size += n_bytes
      slice_size += n_bytes
      if chunk_size >= self.chunk_bytes:
        break
      if slice_size >= self.slice_bytes:
        yield piece
        piece, slice_size = [], 0
    else:
      self.exhausted = True
    self.last_chunk_bytes = chunk_size
    if piece:
      yield piece
