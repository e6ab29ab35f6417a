"""Input side: stream documents line by line and group them into bounded chunks.

Format (Google's): one sentence per line, blank lines between documents. Lines
are stripped as Google strips them. Unlike Google's reader, the end of a file
also ends a document (Google's would glue the last document of one file to the
first of the next when a file does not end with a blank line), and a line that
is not valid UTF-8 is skipped and counted (or, with `strict`, is an error).
"""

import dataclasses

from fileio import InputError, open_file


@dataclasses.dataclass
class ReadStats:
  """What the reader saw: counted so the summary can report what was skipped."""
  bytes_read: int = 0
  lines: int = 0
  documents: int = 0
  bad_utf8_lines: int = 0


def read_documents(files, stats, strict=False):
  """Yields (document, n_bytes): a document is a list of non-blank stripped lines.

  Streams: only the current document is held. `stats` is updated in place.
  """
  for path in files:
    doc, doc_bytes = [], 0
    with open_file(path, "rb") as f:
      for line_no, raw in enumerate(f, start=1):
        stats.bytes_read += len(raw)
        stats.lines += 1
        try:
          line = raw.decode("utf-8").strip()
        except UnicodeDecodeError as e:
          if strict:
            raise InputError(f"{path}:{line_no}: line is not valid UTF-8 ({e.reason} at byte "
                             f"{e.start}); drop --strict to skip such lines") from None
          stats.bad_utf8_lines += 1
          continue
        if line:
          doc.append(line)
          doc_bytes += len(raw)
        elif doc:
          stats.documents += 1
          yield doc, doc_bytes
          doc, doc_bytes = [], 0
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
