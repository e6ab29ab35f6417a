"""A processor for the user's own TSV/CSV files: columns chosen by name or index.

Files are `<data_dir>/{train,dev,test}.{tsv,csv,txt}` (exactly one per split;
`train_aug.*` for training with `aug_train`).
The delimiter follows the extension (`.tsv` tab, `.csv` comma) unless given;
`.txt` needs an explicit delimiter. Tab-separated files are split verbatim
(no quote character, like GLUE); comma-separated files follow CSV quoting.
Labels are discovered from the training file (sorted: numerically when every
label is an integer, else as strings) and must be saved with the model
(`labels.save_label_list`) so that eval/predict runs can restore them.
"""

import os

from classification.processors import AUG_TRAIN_SPLIT, DataFormatError, DataProcessor, Layout
from cli import FlagError
import fileio

_DELIMITERS = {".tsv": "\t", ".csv": ","}


def sort_labels(labels):
  """Sorted distinct labels: by integer value when all are integers, else as strings."""
  labels = set(labels)
  try:
    return sorted(labels, key=lambda l: (int(l), l))
  except ValueError:
    return sorted(labels)


class DelimitedFileProcessor(DataProcessor):
  """User data in delimited files.

  Args:
    text_a_column: header name, or 0-based index, of the first text.
    label_column: header name or index of the label (ignored in the test file).
    text_b_column: optional second text, for sentence-pair tasks.
    header: whether the first row of each file is a header.
    delimiter: field separator; None picks it from the file extension. "\\t" (as
      typed on a command line) and "tab" mean a tab.
    regression: labels are float scores instead of classes.
    labels: the label list, when already known (eval/predict from a saved model).
    skip_bad_rows: skip and count malformed rows instead of failing.
    aug_train: train on `train_aug.{tsv,csv,txt}`, augment_data.py's output.
  """

  def __init__(self, text_a_column, label_column, text_b_column=None, header=True,
               delimiter=None, regression=False, labels=None, skip_bad_rows=False,
               aug_train=False):
    super().__init__(skip_bad_rows=skip_bad_rows)
    self.train_split = AUG_TRAIN_SPLIT if aug_train else "train"
    if not header and not all(_is_index(c) for c in (text_a_column, text_b_column,
                                                     label_column) if c is not None):
      raise FlagError("without a header, columns must be given as 0-based indices")
    self._columns = dict(text_a=text_a_column, text_b=text_b_column, label=label_column)
    self.header = header
    self.delimiter = "\t" if delimiter in ("\\t", "tab") else delimiter
    self.is_regression = regression
    self._labels = None if labels is None else list(labels)

  def set_labels(self, labels):
    """Fixes the label list (e.g. from a saved label_list.json)."""
    self._labels = list(labels)

  def get_labels(self):
    if self.is_regression:
      return []
    if self._labels is None:
      raise ValueError("the label list is not known yet: read the training examples first, "
                       "or restore it with set_labels(load_label_list(...))")
    return list(self._labels)

  def get_train_examples(self, data_dir):
    path = self._find(data_dir, self.train_split)
    examples = self._read(path, "train", labelled=True)
    if not self.is_regression and self._labels is None:
      if not examples:
        raise DataFormatError(f"{path}: no labelled rows to learn the labels from")
      self._labels = sort_labels(e.label for e in examples)
    return examples

  def get_train_table(self, data_dir):
    path = self._find(data_dir, self.train_split)
    delimiter = self._delimiter(path)
    return self._read_table(path, self._layout(labelled=True), "train", delimiter,
                            self._quotechar(delimiter))

  def get_dev_examples(self, data_dir):
    return self._read(self._find(data_dir, "dev"), "dev", labelled=True)

  def get_test_examples(self, data_dir):
    return self._read(self._find(data_dir, "test"), "test", labelled=False)

  def _label_choices(self):
    # While reading the training file for the first time any label is accepted.
    if self._labels is None and not self.is_regression:
      return None
    return super()._label_choices()

  def _layout(self, labelled):
    c = self._columns
    return Layout(self.header, text_a=c["text_a"], text_b=c["text_b"],
                  label=c["label"] if labelled else None)

  def _read(self, path, set_type, labelled):
    delimiter = self._delimiter(path)
    return self._read_examples(path, self._layout(labelled), set_type, delimiter=delimiter,
                               quotechar=self._quotechar(delimiter))

  @staticmethod
  def _quotechar(delimiter):
    return None if delimiter == "\t" else '"'

  def _delimiter(self, path):
    if self.delimiter is not None:
      return self.delimiter
    ext = os.path.splitext(path)[1].lower()
    if ext not in _DELIMITERS:
      raise FlagError(f"{path}: cannot tell the delimiter from the extension {ext!r}; "
                       "give it explicitly")
    return _DELIMITERS[ext]

  @staticmethod
  def _find(data_dir, split):
    found = [os.path.join(data_dir, split + ext) for ext in (".tsv", ".csv", ".txt")]
    found = [p for p in found if fileio.isfile(p)]
    if len(found) != 1:
      what = "several" if found else "no"
      raise DataFormatError(f"{data_dir}: expected exactly one of {split}.tsv, {split}.csv, "
                            f"{split}.txt; found {what}: {found}")
    return found[0]


def _is_index(column):
  return isinstance(column, int) or str(column).lstrip("-").isdigit()

