"""Processors for the GLUE tasks and XNLI, reading the files as distributed.

Layouts follow Google's `run_classifier.py` (CoLA, MNLI, MRPC, XNLI) and the
GLUE release for the tasks Google has no processor for (SST-2, STS-B, QQP,
QNLI, RTE, WNLI). Columns are 0-based. Guids are `<set>-<row>` where row counts
the file's rows from 0 with the header as row 0 (Google's `i`); MNLI uses its
own index column, as Google does.
"""

import os

from classification.processors import AUG_TRAIN_SPLIT, DataFormatError, DataProcessor, Layout
import fileio

_HEADER = True
_NO_HEADER = False


class GlueProcessor(DataProcessor):
  """A task whose train/dev/test files are `<data_dir>/{train,dev,test}.tsv`.

  `aug_train=True` trains on `train_aug.tsv` instead, augment_data.py's output
  (TinyBERT's `--aug_train`).
  """

  labels = ()
  train_layout = dev_layout = test_layout = None
  dev_file, dev_set = "dev.tsv", "dev"
  test_file, test_set = "test.tsv", "test"

  def __init__(self, skip_bad_rows=False, aug_train=False):
    super().__init__(skip_bad_rows=skip_bad_rows)
    self.train_file = (AUG_TRAIN_SPLIT if aug_train else "train") + ".tsv"

  def get_train_examples(self, data_dir):
    return self._read_examples(os.path.join(data_dir, self.train_file), self.train_layout,
                               "train")

  def get_train_table(self, data_dir):
    return self._read_table(os.path.join(data_dir, self.train_file), self.train_layout, "train")

  def get_dev_examples(self, data_dir):
    return self._read_examples(os.path.join(data_dir, self.dev_file), self.dev_layout,
                               self.dev_set)

  def get_test_examples(self, data_dir):
    return self._read_examples(os.path.join(data_dir, self.test_file), self.test_layout,
                               self.test_set)

  def get_labels(self):
    return list(self.labels)


class ColaProcessor(GlueProcessor):
  """CoLA: train/dev have no header (source, label, annotation, sentence); test has one."""
  labels = ("0", "1")
  train_layout = dev_layout = Layout(_NO_HEADER, text_a=3, label=1, num_columns=4)
  test_layout = Layout(_HEADER, text_a=1)


class Sst2Processor(GlueProcessor):
  """SST-2: `sentence label`; test `index sentence`."""
  labels = ("0", "1")
  train_layout = dev_layout = Layout(_HEADER, text_a=0, label=1)
  test_layout = Layout(_HEADER, text_a=1)


class MrpcProcessor(GlueProcessor):
  """MRPC: `Quality #1_ID #2_ID #1_String #2_String`; test has an index for Quality."""
  labels = ("0", "1")
  train_layout = dev_layout = Layout(_HEADER, text_a=3, text_b=4, label=0)
  test_layout = Layout(_HEADER, text_a=3, text_b=4)


class StsbProcessor(GlueProcessor):
  """STS-B (regression): sentence1/sentence2 in columns 7/8, the 0-5 score last."""
  is_regression = True
  train_layout = dev_layout = Layout(_HEADER, text_a=7, text_b=8, label=9)
  test_layout = Layout(_HEADER, text_a=7, text_b=8)


class QqpProcessor(GlueProcessor):
  """QQP: `id qid1 qid2 question1 question2 is_duplicate`; test `id question1 question2`."""
  labels = ("0", "1")
  train_layout = dev_layout = Layout(_HEADER, text_a=3, text_b=4, label=5)
  test_layout = Layout(_HEADER, text_a=1, text_b=2)


class QnliProcessor(GlueProcessor):
  """QNLI: `index question sentence label`; test `index question sentence`."""
  labels = ("entailment", "not_entailment")
  train_layout = dev_layout = Layout(_HEADER, text_a=1, text_b=2, label=3)
  test_layout = Layout(_HEADER, text_a=1, text_b=2)


class RteProcessor(QnliProcessor):
  """RTE: `index sentence1 sentence2 label`; test `index sentence1 sentence2`."""


class WnliProcessor(QnliProcessor):
  """WNLI: RTE's layout with labels 0/1."""
  labels = ("0", "1")


class MnliProcessor(GlueProcessor):
  """MNLI: sentence1/sentence2 in columns 8/9, gold label last; guid from column 0.

  `mismatched=False` (Google's processor) reads dev_matched.tsv/test_matched.tsv;
  `mismatched=True` reads dev_mismatched.tsv/test_mismatched.tsv.
  """
  labels = ("contradiction", "entailment", "neutral")
  train_layout = dev_layout = Layout(_HEADER, text_a=8, text_b=9, label=-1, guid=0)
  test_layout = Layout(_HEADER, text_a=8, text_b=9, guid=0)

  def __init__(self, mismatched=False, skip_bad_rows=False, aug_train=False):
    super().__init__(skip_bad_rows=skip_bad_rows, aug_train=aug_train)
    kind = "mismatched" if mismatched else "matched"
    self.dev_file, self.dev_set = f"dev_{kind}.tsv", f"dev_{kind}"
    # Google names matched test examples "test-<id>".
    self.test_file, self.test_set = f"test_{kind}.tsv", "test_mismatched" if mismatched else "test"


class XnliProcessor(DataProcessor):
  """XNLI: train on the machine-translated MultiNLI, dev/test from XNLI-1.0 for one language.

  Files are looked up where Google's processor reads them (`<data_dir>/multinli/
  multinli.train.<lang>.tsv`, `<data_dir>/xnli.dev.tsv`) and, failing that, where
  the two release zips unpack (`<data_dir>/XNLI-MT-1.0/multinli/...`,
  `<data_dir>/XNLI-1.0/xnli.dev.tsv`). Google fixes the language to "zh"; here it
  is a parameter with that default. Google has no XNLI test reader: this one
  reads xnli.test.tsv like dev, with placeholder labels as for every test set.
  """
  labels = ("contradiction", "entailment", "neutral")
  _train_layout = Layout(_HEADER, text_a=0, text_b=1, label=2)
  _eval_layout = Layout(_HEADER, text_a=6, text_b=7, label=1)
  _test_layout = Layout(_HEADER, text_a=6, text_b=7)

  def __init__(self, language="zh", skip_bad_rows=False):
    super().__init__(skip_bad_rows=skip_bad_rows)
    self.language = language

  def get_labels(self):
    return list(self.labels)

  def get_train_examples(self, data_dir):
    name = os.path.join("multinli", f"multinli.train.{self.language}.tsv")
    path = _find(data_dir, name, os.path.join("XNLI-MT-1.0", name))
    return self._read_examples(
        path, self._train_layout, "train",
        map_label=lambda l: "contradiction" if l == "contradictory" else l)

  def get_dev_examples(self, data_dir):
    path = _find(data_dir, "xnli.dev.tsv", os.path.join("XNLI-1.0", "xnli.dev.tsv"))
    return self._read_examples(path, self._eval_layout, "dev", keep_row=self._in_language)

  def get_test_examples(self, data_dir):
    path = _find(data_dir, "xnli.test.tsv", os.path.join("XNLI-1.0", "xnli.test.tsv"))
    return self._read_examples(path, self._test_layout, "test", keep_row=self._in_language)

  def _in_language(self, fields):
    return fields[0] == self.language


def _find(data_dir, *names):
  """The first of data_dir/<name> that exists, or an error listing where it looked."""
  paths = [os.path.join(data_dir, n) for n in names]
  for path in paths:
    if fileio.isfile(path):
      return path
  raise DataFormatError("XNLI file not found; looked for " + " and ".join(paths))
