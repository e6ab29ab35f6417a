"""DataProcessor base: reads delimited files into InputExamples with row-level checks.

Files are read the way Google's `_read_tsv` reads GLUE: split on the delimiter
with no quote character (a `"` is text). Only `\\n` ends a line; a trailing `\\r`
is dropped. A UTF-8 byte-order mark at the start of a file is ignored. Blank
lines are ignored. Rows are numbered by physical line, from 1, in all messages.

A malformed row (wrong column count, empty text, a score that is not a number)
raises `DataFormatError` naming file and line, or, with `skip_bad_rows=True`, is
skipped and counted in `processor.skipped_rows`. A label that is not one of the
task's labels always raises: it means the wrong task or the wrong file.
"""

import csv
import dataclasses
import math

from absl import logging

from classification.examples import InputExample
from cli import FlagError, UserError
import fileio
from fileio import InputError


class DataFormatError(UserError, ValueError):
  """A data file does not have the layout its task expects."""


class _BadRow(Exception):
  """A malformed row: raised inside the reader, turned into an error or a skip."""


@dataclasses.dataclass(frozen=True)
class Layout:
  """Where a file's fields are.

  Columns are 0-based indices (negative counts from the end) or, for files with a
  header, header names. `label=None` marks an unlabelled (test) file;
  `guid=None` names examples by their row index, as Google does for most tasks.
  Without a header every row must have `num_columns` fields (default: as many as
  the first row); with one, as many as the header.
  """
  header: bool
  text_a: int | str
  text_b: int | str | None = None
  label: int | str | None = None
  guid: int | str | None = None
  num_columns: int | None = None


# The split name of an augmented training file (`train_aug.tsv`, TinyBERT's name), which
# processors read instead of the training file with `aug_train=True`.
AUG_TRAIN_SPLIT = "train_aug"


@dataclasses.dataclass
class Table:
  """A data file's rows as they are, for tools that rewrite them (augment_data.py).

  `header`: the header row, or None; `rows`: the fields of every row read as an
  example (malformed rows skipped with skip_bad_rows are left out);
  `text_columns`: the 0-based indices of text_a (and text_b); `delimiter` and
  `quotechar` as the file is read, so that it can be written back the same way.
  """
  path: str
  header: list | None
  rows: list
  text_columns: tuple
  delimiter: str = "\t"
  quotechar: str | None = None


def read_rows(path, delimiter="\t", quotechar=None):
  """Yields (line_number, fields) for each non-blank row of a delimited UTF-8 file.

  With `quotechar=None` the line is split on the delimiter verbatim (GLUE's
  format); otherwise fields follow CSV quoting rules (and may span lines; the
  number is then the record's first line).
  """
  problem = fileio.missing_file(path)
  if problem:
    raise InputError(f"data file {path}: {problem}")
  if quotechar is None:
    for number, line in _decoded_lines(path):
      line = line.rstrip("\n")
      if line.endswith("\r"):
        line = line[:-1]
      if line:
        yield number, line.split(delimiter)
    return
  lines = (line for _, line in _decoded_lines(path))
  reader = csv.reader(lines, delimiter=delimiter, quotechar=quotechar, strict=True)
  first_line = 1
  try:
    for fields in reader:
      if fields and fields != [""]:
        yield first_line, fields
      first_line = reader.line_num + 1
  except csv.Error as e:
    raise DataFormatError(f"{path}, line {reader.line_num}: {e}") from None


def _decoded_lines(path):
  """Yields (line_number, line with its line end) of a UTF-8 file; a leading BOM is dropped."""
  with fileio.open_file(path, "rb") as f:
    for number, raw in enumerate(f, 1):
      if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
      try:
        yield number, raw.decode("utf-8")
      except UnicodeDecodeError as e:
        raise DataFormatError(f"{path}, line {number}: not valid UTF-8 ({e.reason} at byte "
                              f"{e.start})") from None


def _column_index(column, header, path, what):
  """Resolves a column given as an index or a header name to an index."""
  if column is None or isinstance(column, int):
    return column
  if header is not None and column in header:
    return header.index(column)
  if column.lstrip("-").isdigit():
    return int(column)
  names = ", ".join(repr(h) for h in header) if header is not None else "(the file has no header)"
  raise DataFormatError(f"{path}: {what} column {column!r} is not in the header; "
                        f"columns are: {names}")


class DataProcessor:
  """Base class with Google's API: get_{train,dev,test}_examples(data_dir), get_labels()."""

  # True for tasks whose label is a float score (STS-B); get_labels() is then [].
  is_regression = False

  def __init__(self, skip_bad_rows=False):
    self.skip_bad_rows = skip_bad_rows
    # (path, line_number, reason) of every row skipped so far with skip_bad_rows.
    self.skipped_rows = []

  def get_train_examples(self, data_dir):
    raise NotImplementedError()

  def get_dev_examples(self, data_dir):
    raise NotImplementedError()

  def get_test_examples(self, data_dir):
    raise NotImplementedError()

  def get_labels(self):
    raise NotImplementedError()

  def get_train_table(self, data_dir):
    """The training file as a `Table`, checked as get_train_examples checks it."""
    raise FlagError(f"{type(self).__name__} cannot give its training file as a table (the GLUE "
                    "tasks and generic can)")

  @classmethod
  def _read_tsv(cls, input_file, quotechar=None):
    """All non-blank rows of a TSV file, header included: Google's helper, for custom
    processors written against Google's DataProcessor."""
    return [fields for _, fields in read_rows(input_file, "\t", quotechar)]

  def _label_choices(self):
    """The labels a labelled row may carry; None accepts any (and regression ignores it)."""
    return None if self.is_regression else self.get_labels()

  def _placeholder_label(self):
    """The label test examples carry: the first label (as Google), or 0.0 for regression."""
    return 0.0 if self.is_regression else self.get_labels()[0]

  def _parse_label(self, value, path, number, known_labels):
    """Checks a label field: a known label, or a finite float for regression."""
    if self.is_regression:
      try:
        score = float(value)
      except ValueError:
        score = math.nan
      if not math.isfinite(score):
        raise _BadRow(f"the score {value!r} is not a number")
      return score
    if not value.strip():
      raise _BadRow("empty label")
    if known_labels is not None and value not in known_labels:
      raise DataFormatError(
          f"{path}, line {number}: unknown label {value!r}; this task's labels are "
          f"{', '.join(repr(l) for l in known_labels)}")
    return value

  def _read_examples(self, path, layout, set_type, delimiter="\t", quotechar=None,
                     keep_row=None, map_label=None):
    """Reads one file into InputExamples.

    `keep_row(fields)` can drop rows (XNLI's language filter) and `map_label`
    rewrites label strings before they are checked (XNLI's "contradictory").
    """
    return [example for _, example in self._read_rows(path, layout, set_type, delimiter,
                                                      quotechar, keep_row, map_label)
            if example is not None]

  def _read_table(self, path, layout, set_type, delimiter="\t", quotechar=None):
    """Reads one file into a `Table`, with the checks of `_read_examples`."""
    header, rows = None, []
    for fields, example in self._read_rows(path, layout, set_type, delimiter, quotechar):
      if example is None:
        header = fields
      else:
        rows.append(fields)
    text_columns = tuple(_column_index(column, header, path, what) for column, what in (
        (layout.text_a, "text_a"), (layout.text_b, "text_b")) if column is not None)
    return Table(path, header, rows, text_columns, delimiter, quotechar)

  def _read_rows(self, path, layout, set_type, delimiter="\t", quotechar=None, keep_row=None,
                 map_label=None):
    """Yields (fields, InputExample) for each row kept, and (header fields, None) first for a
    file with a header."""
    header = None
    expected = layout.num_columns
    known_labels = None if layout.label is None else self._label_choices()
    placeholder = self._placeholder_label() if layout.label is None else None
    columns = None
    skipped = 0
    for number, fields in read_rows(path, delimiter, quotechar):
      if columns is None:
        if layout.header:
          header = fields
          expected = len(fields)
        columns = [_column_index(c, header, path, what) for c, what in (
            (layout.text_a, "text_a"), (layout.text_b, "text_b"), (layout.label, "label"),
            (layout.guid, "guid"))]
        if expected is None:
          expected = len(fields)
        needed = max(c if c >= 0 else -c - 1 for c in columns if c is not None) + 1
        if expected < needed:
          raise DataFormatError(
              f"{path}, line {number}: expected at least {needed} columns for this task "
              f"(text/label at 0-based columns {[c for c in columns if c is not None]}), "
              f"the file has {expected}")
        if layout.header:
          self._check_header(fields, columns[2], path, number, known_labels, map_label)
          yield fields, None
          continue
      try:
        if len(fields) != expected:
          raise _BadRow(f"{len(fields)} columns, expected {expected}")
        if keep_row is not None and not keep_row(fields):
          continue
        example = self._make_example(fields, columns, set_type, number, path, known_labels,
                                     placeholder, map_label)
      except _BadRow as e:
        if not self.skip_bad_rows:
          raise DataFormatError(f"{path}, line {number}: {e} (skip_bad_rows skips and counts "
                                f"such rows)") from None
        self.skipped_rows.append((path, number, str(e)))
        skipped += 1
        continue
      yield fields, example
    if columns is None:
      raise DataFormatError(f"{path}: the file is empty")
    if skipped:
      logging.warning("Skipped %d malformed rows of %s (e.g. line %d: %s)", skipped, path,
                      self.skipped_rows[-skipped][1], self.skipped_rows[-skipped][2])

  def _check_header(self, fields, label_col, path, number, known_labels, map_label):
    """Refuses a first line that reads as an example: it would be skipped as the header."""
    if label_col is None or (known_labels is None and not self.is_regression):
      return
    value = fields[label_col]
    try:
      self._parse_label(map_label(value) if map_label else value, path, number, known_labels)
    except (_BadRow, DataFormatError):
      return  # not a label: a header
    raise DataFormatError(
        f"{path}, line {number}: this task's files start with a header line, which is skipped, "
        f"but this line reads as an example (label {value!r}): add the header line")

  def _make_example(self, fields, columns, set_type, number, path, known_labels, placeholder,
                    map_label):
    text_a_col, text_b_col, label_col, guid_col = columns
    text_a = fields[text_a_col]
    if not text_a.strip():
      raise _BadRow(f"empty text_a (column {text_a_col})")
    text_b = None
    if text_b_col is not None:
      text_b = fields[text_b_col]
      if not text_b.strip():
        raise _BadRow(f"empty text_b (column {text_b_col})")
    if label_col is None:
      label = placeholder
    else:
      value = fields[label_col]
      if map_label is not None:
        value = map_label(value)
      label = self._parse_label(value, path, number, known_labels)
    # Google numbers rows from 0 with the header as row 0: that is line_number - 1.
    row_id = fields[guid_col] if guid_col is not None else number - 1
    return InputExample(guid=f"{set_type}-{row_id}", text_a=text_a, text_b=text_b, label=label)
