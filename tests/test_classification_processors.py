"""Task processors: the real GLUE files, fixture files for the other tasks, bad input."""

import collections
import json
import re

import pytest

from classification import (DataFormatError, DataProcessor, InputExample, TASK_NAMES, get_processor,
                            load_label_list, save_label_list)
from classification.glue import (ColaProcessor, MnliProcessor, MrpcProcessor, QnliProcessor,
                                 QqpProcessor, RteProcessor, Sst2Processor, StsbProcessor,
                                 WnliProcessor, XnliProcessor)
import fileio


def write_tsv(path, rows, end="\n"):
  """Writes rows (lists of fields) tab-joined; returns the path."""
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text("".join("\t".join(r) + end for r in rows), encoding="utf-8")
  return path


# --- The real GLUE files --------------------------------------------------------------------

@pytest.fixture(scope="module")
def glue(shared_dir):
  return shared_dir / "data" / "glue"


@pytest.mark.parametrize("task,directory,counts", [
    ("sst-2", "SST-2", (67349, 872, 1821)),
    ("mrpc", "MRPC", (3668, 408, 1725)),
    ("cola", "CoLA", (8551, 1043, 1063)),
    ("rte", "RTE", (2490, 277, 3000)),
    ("sts-b", "STS-B", (5749, 1500, 1379)),
])
def test_real_glue_counts(glue, task, directory, counts):
  p = get_processor(task)
  d = str(glue / directory)
  train, dev, test = p.get_train_examples(d), p.get_dev_examples(d), p.get_test_examples(d)
  assert (len(train), len(dev), len(test)) == counts
  placeholder = 0.0 if p.is_regression else p.get_labels()[0]
  assert {e.label for e in test} == {placeholder}
  assert len({e.guid for e in train + dev + test}) == sum(counts)
  if p.is_regression:
    assert all(isinstance(e.label, float) and 0.0 <= e.label <= 5.0 for e in train + dev)
  else:
    assert {e.label for e in train} == set(p.get_labels())


@pytest.mark.parametrize("task,directory,balance", [
    ("sst-2", "SST-2", {"1": 444, "0": 428}),
    ("mrpc", "MRPC", {"1": 279, "0": 129}),
    ("cola", "CoLA", {"1": 721, "0": 322}),
    ("rte", "RTE", {"entailment": 146, "not_entailment": 131}),
])
def test_real_glue_dev_label_balance(glue, task, directory, balance):
  dev = get_processor(task).get_dev_examples(str(glue / directory))
  assert collections.Counter(e.label for e in dev) == balance


def test_real_glue_first_examples(glue):
  e = Sst2Processor().get_train_examples(str(glue / "SST-2"))[0]
  # The text keeps its trailing space: nothing is stripped.
  assert e == InputExample("train-1", "hide new secretions from the parental units ", None, "0")
  e = MrpcProcessor().get_train_examples(str(glue / "MRPC"))[0]
  assert e.guid == "train-1" and e.label == "1"
  # Quotes are text, not CSV quoting.
  assert e.text_a == ('Amrozi accused his brother , whom he called " the witness " , of '
                      'deliberately distorting his evidence .')
  assert e.text_b.startswith('Referring to him as only " the witness " , Amrozi')
  e = MrpcProcessor().get_test_examples(str(glue / "MRPC"))[0]
  assert e.guid == "test-1" and e.label == "0" and e.text_a.startswith("PCCW 's chief")
  cola = ColaProcessor()
  e = cola.get_train_examples(str(glue / "CoLA"))[0]
  assert e == InputExample("train-0", "Our friends won't buy this analysis, let alone the next "
                           "one we propose.", None, "1")
  e = cola.get_test_examples(str(glue / "CoLA"))[0]
  assert e == InputExample("test-1", "Bill whistled past the house.", None, "0")
  # CoLA dev has no final newline: its last row is still read whole.
  last_line = (glue / "CoLA" / "dev.tsv").read_text(encoding="utf-8").split("\n")[-1]
  assert cola.get_dev_examples(str(glue / "CoLA"))[-1].text_a == last_line.split("\t")[3]
  e = RteProcessor().get_train_examples(str(glue / "RTE"))[0]
  assert e == InputExample("train-1", "No Weapons of Mass Destruction Found in Iraq Yet.",
                           "Weapons of Mass Destruction Found in Iraq.", "not_entailment")
  e = StsbProcessor().get_dev_examples(str(glue / "STS-B"))[0]
  assert e == InputExample("dev-1", "A man with a hard hat is dancing.",
                           "A man wearing a hard hat is dancing.", 5.0)


# --- Tasks without real data: small files in GLUE's layouts ---------------------------------

def test_qqp(tmp_path):
  head = ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"]
  write_tsv(tmp_path / "train.tsv", [head, ["7", "1", "2", "How do I cook rice?",
                                            "What is the best way to cook rice?", "1"]])
  write_tsv(tmp_path / "dev.tsv", [head, ["3", "5", "6", "Why is the sky blue?",
                                          "Is the sky blue?", "0"]])
  write_tsv(tmp_path / "test.tsv", [["id", "question1", "question2"],
                                    ["0", "Who wrote Hamlet?", "Who is Hamlet's author?"]])
  p = QqpProcessor()
  assert p.get_labels() == ["0", "1"]
  assert p.get_train_examples(str(tmp_path)) == [InputExample(
      "train-1", "How do I cook rice?", "What is the best way to cook rice?", "1")]
  assert p.get_dev_examples(str(tmp_path))[0].label == "0"
  assert p.get_test_examples(str(tmp_path)) == [InputExample(
      "test-1", "Who wrote Hamlet?", "Who is Hamlet's author?", "0")]


MNLI_HEAD = ["index", "promptID", "pairID", "genre", "sentence1_binary_parse",
             "sentence2_binary_parse", "sentence1_parse", "sentence2_parse", "sentence1",
             "sentence2"]


def mnli_row(index, s1, s2, *labels):
  return [index, "31193", "31193n", "government", "( x )", "( y )", "(ROOT x)", "(ROOT y)",
          s1, s2, *labels]


def test_mnli_matched_and_mismatched(tmp_path):
  write_tsv(tmp_path / "train.tsv", [MNLI_HEAD + ["label1", "gold_label"],
                                     mnli_row("0", "A man eats.", "A person eats.", "entailment",
                                              "entailment")])
  dev_head = MNLI_HEAD + ["label1", "label2", "label3", "label4", "label5", "gold_label"]
  for kind, gold in (("matched", "neutral"), ("mismatched", "contradiction")):
    write_tsv(tmp_path / f"dev_{kind}.tsv", [dev_head, mnli_row(
        "9", f"{kind} premise", "hypothesis", "neutral", "neutral", "contradiction", "neutral",
        "neutral", gold)])
    write_tsv(tmp_path / f"test_{kind}.tsv", [MNLI_HEAD, mnli_row("4", f"{kind} test", "h")])
  p = MnliProcessor()
  assert p.get_labels() == ["contradiction", "entailment", "neutral"]
  # Google names MNLI examples by the index column, not the row.
  assert p.get_train_examples(str(tmp_path)) == [InputExample(
      "train-0", "A man eats.", "A person eats.", "entailment")]
  assert p.get_dev_examples(str(tmp_path)) == [InputExample(
      "dev_matched-9", "matched premise", "hypothesis", "neutral")]
  assert p.get_test_examples(str(tmp_path)) == [InputExample(
      "test-4", "matched test", "h", "contradiction")]
  mm = get_processor("MNLI-MM")
  assert mm.get_dev_examples(str(tmp_path)) == [InputExample(
      "dev_mismatched-9", "mismatched premise", "hypothesis", "contradiction")]
  assert mm.get_test_examples(str(tmp_path))[0].text_a == "mismatched test"


@pytest.mark.parametrize("cls,labels", [
    (QnliProcessor, ["entailment", "not_entailment"]),
    (RteProcessor, ["entailment", "not_entailment"]),
    (WnliProcessor, ["0", "1"]),
])
def test_qnli_rte_wnli_layout(tmp_path, cls, labels):
  head = ["index", "question", "sentence", "label"]
  write_tsv(tmp_path / "train.tsv", [head, ["0", "Q one?", "S one.", labels[1]],
                                     ["1", "Q two?", "S two.", labels[0]]])
  write_tsv(tmp_path / "test.tsv", [head[:3], ["0", "Q?", "S."]])
  p = cls()
  assert p.get_labels() == labels
  assert p.get_train_examples(str(tmp_path)) == [
      InputExample("train-1", "Q one?", "S one.", labels[1]),
      InputExample("train-2", "Q two?", "S two.", labels[0])]
  assert p.get_test_examples(str(tmp_path)) == [InputExample("test-1", "Q?", "S.", labels[0])]


XNLI_HEAD = ["language", "gold_label", "sentence1_binary_parse", "sentence2_binary_parse",
             "sentence1_parse", "sentence2_parse", "sentence1", "sentence2", "promptID", "pairID",
             "genre", "label1", "label2", "label3", "label4", "label5", "sentence1_tokenized",
             "sentence2_tokenized", "match"]


def xnli_row(language, label, s1, s2):
  return [language, label, "", "", "", "", s1, s2, "1", "1", "facetoface", label, label, label,
          label, label, s1, s2, "True"]


def write_xnli(root, google_layout):
  mt = root / "multinli" if google_layout else root / "XNLI-MT-1.0" / "multinli"
  xnli = root if google_layout else root / "XNLI-1.0"
  for lang, premise in (("zh", "他走了。"), ("de", "Er ging.")):
    write_tsv(mt / f"multinli.train.{lang}.tsv",
              [["premise", "hypo", "label"], [premise, "h1", "contradictory"],
               [premise, "h2", "neutral"]])
  for name in ("xnli.dev.tsv", "xnli.test.tsv"):
    write_tsv(xnli / name, [XNLI_HEAD, xnli_row("de", "entailment", "Sie lacht.", "Sie ist froh."),
                            xnli_row("zh", "neutral", "她笑了。", "她很高兴。"),
                            xnli_row("zh", "contradiction", "天晴。", "下雨。")])


@pytest.mark.parametrize("google_layout", [True, False])
def test_xnli(tmp_path, google_layout):
  write_xnli(tmp_path, google_layout)
  p = get_processor("XNLI")
  assert p.language == "zh" and p.get_labels() == ["contradiction", "entailment", "neutral"]
  # "contradictory" in the machine-translated training data becomes "contradiction".
  assert p.get_train_examples(str(tmp_path)) == [
      InputExample("train-1", "他走了。", "h1", "contradiction"),
      InputExample("train-2", "他走了。", "h2", "neutral")]
  # Dev keeps only this language's rows; guids count all rows, as Google's `i`.
  assert p.get_dev_examples(str(tmp_path)) == [
      InputExample("dev-2", "她笑了。", "她很高兴。", "neutral"),
      InputExample("dev-3", "天晴。", "下雨。", "contradiction")]
  assert [e.label for e in p.get_test_examples(str(tmp_path))] == ["contradiction"] * 2
  de = get_processor("xnli", language="de")
  assert de.get_train_examples(str(tmp_path))[0].text_a == "Er ging."
  assert de.get_dev_examples(str(tmp_path)) == [
      InputExample("dev-1", "Sie lacht.", "Sie ist froh.", "entailment")]


def test_xnli_missing_file_names_both_places(tmp_path):
  with pytest.raises(DataFormatError, match=r"xnli\.dev\.tsv and .*XNLI-1\.0/xnli\.dev\.tsv"):
    XnliProcessor().get_dev_examples(str(tmp_path))


# --- File-format details ----------------------------------------------------------------------

def test_crlf_bom_blank_lines_and_quotes(tmp_path):
  (tmp_path / "train.tsv").write_bytes(
      b'\xef\xbb\xbfsentence\tlabel\r\n"a quoted" start\t1\r\n\r\nplain "x\t0\r\n')
  # Blank lines are ignored but still counted in guids, as rows of Google's csv reader.
  assert Sst2Processor().get_train_examples(str(tmp_path)) == [
      InputExample("train-1", '"a quoted" start', None, "1"),
      InputExample("train-3", 'plain "x', None, "0")]


def test_read_tsv_for_custom_processors(tmp_path):
  write_tsv(tmp_path / "x.tsv", [["h1", "h2"], ['"a', 'b"'], ["", "c"]])
  assert DataProcessor._read_tsv(str(tmp_path / "x.tsv")) == [["h1", "h2"], ['"a', 'b"'],
                                                             ["", "c"]]


def test_quote_does_not_protect_a_tab(tmp_path):
  write_tsv(tmp_path / "train.tsv", [["sentence", "label"], ['"a\tb"', "1"]])
  with pytest.raises(DataFormatError, match=r"train\.tsv, line 2: 3 columns, expected 2"):
    Sst2Processor().get_train_examples(str(tmp_path))


def test_invalid_utf8_names_line(tmp_path):
  (tmp_path / "train.tsv").write_bytes(b"sentence\tlabel\nok\t1\nbad \xff\t0\n")
  with pytest.raises(DataFormatError, match=r"train\.tsv, line 3: not valid UTF-8"):
    Sst2Processor().get_train_examples(str(tmp_path))


# --- Malformed rows and unknown labels --------------------------------------------------------

@pytest.mark.parametrize("bad_row,reason", [
    (["only one column"], r"line 3: 1 columns, expected 2"),
    (["x", "1", "extra"], r"line 3: 3 columns, expected 2"),
    (["   ", "1"], r"line 3: empty text_a \(column 0\)"),
    (["text", ""], r"line 3: empty label"),
])
def test_bad_row_error_names_file_and_line(tmp_path, bad_row, reason):
  write_tsv(tmp_path / "train.tsv", [["sentence", "label"], ["good", "1"], bad_row,
                                     ["good too", "0"]])
  with pytest.raises(DataFormatError, match=r"train\.tsv, " + reason + r".*skip_bad_rows"):
    Sst2Processor().get_train_examples(str(tmp_path))
  p = get_processor("sst-2", skip_bad_rows=True)
  assert [e.text_a for e in p.get_train_examples(str(tmp_path))] == ["good", "good too"]
  assert len(p.skipped_rows) == 1
  path, line, why = p.skipped_rows[0]
  assert path.endswith("train.tsv") and line == 3 and why


def test_cola_without_header_checks_column_count(tmp_path):
  write_tsv(tmp_path / "train.tsv", [["gj04", "1", "", "Fine."], ["gj04", "0", "*", "x", "y"]])
  with pytest.raises(DataFormatError, match=r"train\.tsv, line 2: 5 columns, expected 4"):
    ColaProcessor().get_train_examples(str(tmp_path))


def test_mrpc_empty_text_b(tmp_path):
  head = ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"]
  write_tsv(tmp_path / "train.tsv", [head, ["1", "1", "2", "A.", ""]])
  with pytest.raises(DataFormatError, match=r"line 2: empty text_b \(column 4\)"):
    MrpcProcessor().get_train_examples(str(tmp_path))


@pytest.mark.parametrize("score", ["abc", "nan", "inf", ""])
def test_stsb_bad_score(tmp_path, score):
  head = ["index", "genre", "filename", "year", "old_index", "source1", "source2", "sentence1",
          "sentence2", "score"]
  row = ["0", "main-news", "f", "2012", "1", "none", "none", "A b.", "C d."]
  write_tsv(tmp_path / "dev.tsv", [head, row + ["3.800"], row + [score]])
  with pytest.raises(DataFormatError, match=rf"dev\.tsv, line 3: the score '{score}' is not a"):
    StsbProcessor().get_dev_examples(str(tmp_path))
  p = StsbProcessor(skip_bad_rows=True)
  assert [e.label for e in p.get_dev_examples(str(tmp_path))] == [3.8]
  assert len(p.skipped_rows) == 1


def test_unknown_dev_label_is_an_error_even_when_skipping(tmp_path):
  head = ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"]
  write_tsv(tmp_path / "dev.tsv", [head, ["1", "1", "2", "A.", "B."], ["2", "3", "4", "C.", "D."]])
  for skip in (False, True):
    with pytest.raises(DataFormatError,
                       match=r"dev\.tsv, line 3: unknown label '2'; this task's labels are "
                             r"'0', '1'"):
      MrpcProcessor(skip_bad_rows=skip).get_dev_examples(str(tmp_path))


@pytest.mark.parametrize("cls, first_row, label", [
    (MrpcProcessor, ["1", "1", "2", "A.", "B."], "1"),
    (Sst2Processor, ["a fine film", "1"], "1"),
    (StsbProcessor, ["0", "main-news", "f", "2012", "1", "none", "none", "A b.", "C d.", "3.8"],
     "3.8"),
])
def test_a_missing_header_line_is_an_error_not_a_lost_example(tmp_path, cls, first_row, label):
  write_tsv(tmp_path / "train.tsv", [first_row, first_row])
  with pytest.raises(DataFormatError,
                     match=rf"train\.tsv, line 1: this task's files start with a header line, "
                           rf"which is skipped, but this line reads as an example \(label "
                           rf"'{re.escape(label)}'\): add the header line"):
    cls().get_train_examples(str(tmp_path))


def test_too_few_columns_for_the_task(tmp_path):
  write_tsv(tmp_path / "train.tsv", [["index", "sentence"], ["0", "just one"]])
  with pytest.raises(DataFormatError, match=r"expected at least 4 columns .* the file has 2"):
    RteProcessor().get_train_examples(str(tmp_path))


def test_missing_file(tmp_path):
  with pytest.raises(fileio.InputError, match=r"data file .*train\.tsv: not found"):
    MrpcProcessor().get_train_examples(str(tmp_path))


# --- Registry -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name,cls", [
    ("cola", ColaProcessor), ("CoLA", ColaProcessor), ("MNLI", MnliProcessor),
    ("mrpc", MrpcProcessor), ("xnli", XnliProcessor), ("SST-2", Sst2Processor),
    ("sst2", Sst2Processor), ("STS-B", StsbProcessor), ("stsb", StsbProcessor),
    ("qqp", QqpProcessor), ("QNLI", QnliProcessor), ("rte", RteProcessor),
    ("WNLI", WnliProcessor), ("mnli_mismatched", MnliProcessor),
])
def test_registry(name, cls):
  assert type(get_processor(name)) is cls


def test_registry_unknown_task_lists_known_ones():
  with pytest.raises(ValueError, match=r"unknown task_name 'glue'; known tasks: cola, "
                                       r".*mrpc.*sts-b.*xnli"):
    get_processor("glue")
  assert {"cola", "mnli", "mrpc", "xnli", "generic"} <= set(TASK_NAMES)


def test_registry_rejects_options_a_task_does_not_take():
  with pytest.raises(ValueError, match=r"bad options \['language'\] for task 'mrpc': .*language"):
    get_processor("mrpc", language="de")
  with pytest.raises(ValueError, match=r"bad options \[\] for task 'generic': .*text_a_column"):
    get_processor("generic")


def test_aug_train_reads_train_aug_and_tables_keep_the_rows(tmp_path):
  write_tsv(tmp_path / "train.tsv", [["sentence", "label"], ["good", "1"]])
  write_tsv(tmp_path / "train_aug.tsv", [["sentence", "label"], ["good", "1"], ["fine", "1"]])
  assert len(get_processor("sst-2").get_train_examples(str(tmp_path))) == 1
  augmented = get_processor("mnli-mm", aug_train=True)  # every GLUE task takes it
  assert augmented.train_file == "train_aug.tsv"
  assert [e.text_a for e in get_processor("sst-2", aug_train=True).get_train_examples(
      str(tmp_path))] == ["good", "fine"]
  table = get_processor("sst-2", aug_train=True).get_train_table(str(tmp_path))
  assert (table.header, table.rows, table.text_columns) == (
      ["sentence", "label"], [["good", "1"], ["fine", "1"]], (0,))
  with pytest.raises(ValueError, match=r"bad options \['aug_train'\] for task 'xnli'"):
    get_processor("xnli", aug_train=True)
  with pytest.raises(ValueError, match="XnliProcessor cannot give its training file as a table"):
    get_processor("xnli").get_train_table(str(tmp_path))


# --- The generic TSV/CSV processor --------------------------------------------------------------

def test_generic_tsv_by_header_names(tmp_path):
  write_tsv(tmp_path / "train.tsv", [["id", "review", "stars"], ["a", "good", "5"],
                                     ["b", "bad", "1"], ["c", "meh", "10"], ["d", "ok", "5"]])
  write_tsv(tmp_path / "dev.tsv", [["id", "review", "stars"], ["e", "fine", "1"],
                                   ["f", "odd", "7"]])
  write_tsv(tmp_path / "test.tsv", [["id", "review"], ["g", "great"]])
  p = get_processor("generic", text_a_column="review", label_column="stars")
  train = p.get_train_examples(str(tmp_path))
  assert [(e.text_a, e.label) for e in train] == [("good", "5"), ("bad", "1"), ("meh", "10"),
                                                 ("ok", "5")]
  # Integer labels sort by value, not as strings ("10" after "5").
  assert p.get_labels() == ["1", "5", "10"]
  assert p.get_test_examples(str(tmp_path)) == [InputExample("test-1", "great", None, "1")]
  with pytest.raises(DataFormatError, match=r"dev\.tsv, line 3: unknown label '7'"):
    p.get_dev_examples(str(tmp_path))


def test_generic_csv_with_quotes_pairs_and_string_labels(tmp_path):
  (tmp_path / "train.csv").write_text(
      'premise,hypothesis,label\n"Hello, world","a ""quoted"" word",yes\n'
      '"two\nlines",b,no\n', encoding="utf-8")
  (tmp_path / "dev.csv").write_text("premise,hypothesis,label\nx,\"\",no\n", encoding="utf-8")
  p = get_processor("generic", text_a_column="premise", text_b_column="hypothesis",
                    label_column="label")
  assert p.get_train_examples(str(tmp_path)) == [
      InputExample("train-1", "Hello, world", 'a "quoted" word', "yes"),
      InputExample("train-2", "two\nlines", "b", "no")]
  assert p.get_labels() == ["no", "yes"]
  with pytest.raises(DataFormatError, match=r"dev\.csv, line 2: empty text_b"):
    p.get_dev_examples(str(tmp_path))


def test_generic_no_header_indices_and_explicit_delimiter(tmp_path):
  (tmp_path / "train.txt").write_text("pos|I like it\nneg|I do not\n", encoding="utf-8")
  p = get_processor("generic", text_a_column="1", label_column="0", header=False)
  with pytest.raises(ValueError, match=r"cannot tell the delimiter .* '\.txt'"):
    p.get_train_examples(str(tmp_path))
  p = get_processor("generic", text_a_column="1", label_column="0", header=False,
                    delimiter="|")
  assert p.get_train_examples(str(tmp_path)) == [InputExample("train-0", "I like it", None, "pos"),
                                                InputExample("train-1", "I do not", None, "neg")]
  # "\t" as typed on a command line means a tab.
  write_tsv(tmp_path / "tab" / "train.txt", [["pos", "a b"]])
  p = get_processor("generic", text_a_column=1, label_column=0, header=False, delimiter="\\t")
  assert p.get_train_examples(str(tmp_path / "tab"))[0].text_a == "a b"
  with pytest.raises(ValueError, match=r"without a header, columns must be given as 0-based"):
    get_processor("generic", text_a_column="text", label_column="0", header=False)


def test_generic_errors(tmp_path):
  write_tsv(tmp_path / "train.tsv", [["text", "label"], ["a", "x"]])
  p = get_processor("generic", text_a_column="txt", label_column="label")
  with pytest.raises(DataFormatError, match=r"text_a column 'txt' is not in the header; "
                                            r"columns are: 'text', 'label'"):
    p.get_train_examples(str(tmp_path))
  with pytest.raises(ValueError, match=r"label list is not known yet"):
    p.get_labels()
  (tmp_path / "train.csv").write_text("text,label\n", encoding="utf-8")
  with pytest.raises(DataFormatError, match=r"exactly one of train\.tsv, train\.csv, train\.txt; "
                                            r"found several"):
    p.get_train_examples(str(tmp_path))


def test_generic_regression(tmp_path):
  write_tsv(tmp_path / "train.tsv", [["s", "score"], ["a", "0.5"], ["b", "x"]])
  p = get_processor("generic", text_a_column="s", label_column="score", regression=True,
                    skip_bad_rows=True)
  assert [e.label for e in p.get_train_examples(str(tmp_path))] == [0.5]
  assert p.get_labels() == [] and p.is_regression and len(p.skipped_rows) == 1


# --- The saved label list ------------------------------------------------------------------------

def test_label_list_round_trip(tmp_path):
  path = save_label_list(tmp_path, ["neg", "pos", "ünï"])
  assert path == str(tmp_path / "label_list.json")
  assert sorted(p.name for p in tmp_path.iterdir()) == ["label_list.json"]  # no temp file left
  assert json.loads((tmp_path / "label_list.json").read_text(encoding="utf-8")) == {
      "labels": ["neg", "pos", "ünï"], "is_regression": False}
  assert load_label_list(tmp_path) == (["neg", "pos", "ünï"], False)
  assert load_label_list(save_label_list(tmp_path / "r.json", [], is_regression=True)) == (
      [], True)
  # A directory that does not exist yet is created.
  assert save_label_list(tmp_path / "new" / "export", ["a"]) == str(
      tmp_path / "new" / "export" / "label_list.json")
  assert load_label_list(tmp_path / "new" / "export") == (["a"], False)
  p = get_processor("generic", text_a_column="t", label_column="l",
                    labels=load_label_list(path)[0])
  assert p.get_labels() == ["neg", "pos", "ünï"]


def test_label_list_errors(tmp_path):
  with pytest.raises(ValueError, match=r"distinct labels"):
    save_label_list(tmp_path, ["a", "a"])
  (tmp_path / "label_list.json").write_text('{"labels": "ab"}', encoding="utf-8")
  with pytest.raises(ValueError, match=r"label_list\.json: not a label list"):
    load_label_list(tmp_path)
