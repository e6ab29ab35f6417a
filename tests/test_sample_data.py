"""Checks the shipped sample data: file formats, label balance, and that vocab.txt is up to date."""

import collections

import pytest

from tests.paths import SAMPLE
from tokenization import FullTokenizer, load_vocab


def _lines(path):
  data = path.read_bytes()
  assert data.endswith(b"\n") and b"\r" not in data, f"{path}: needs LF line ends and a final newline"
  return data.decode("utf-8").split("\n")[:-1]


def test_corpus_is_in_pretraining_format():
  lines = _lines(SAMPLE / "corpus.txt")
  docs = "\n".join(lines).split("\n\n")
  assert lines[0] and lines[-1], "no blank line at the start or end"
  for i, line in enumerate(lines, start=1):
    assert line == line.strip(), f"corpus.txt:{i}: surrounding spaces"
    assert "\n" not in line and "\t" not in line
  assert all(doc and "" not in doc.split("\n") for doc in docs), "one blank line between documents"
  sizes = [len(doc.split("\n")) for doc in docs]
  assert 40 <= len(docs) <= 60 and min(sizes) >= 15 and max(sizes) <= 40
  assert sum(sizes) >= 1500


def _tsv(name):
  lines = _lines(SAMPLE / "sentiment" / name)
  return lines[0].split("\t"), [line.split("\t") for line in lines[1:]]


def test_sentiment_layout_balance_and_no_leaks():
  sentences = collections.Counter()
  for name, size in (("train.tsv", 600), ("dev.tsv", 150)):
    header, rows = _tsv(name)
    assert header == ["sentence", "label"]
    assert len(rows) == size and all(len(r) == 2 and r[0] == r[0].strip() for r in rows)
    labels = collections.Counter(r[1] for r in rows)
    assert labels == {"0": size // 2, "1": size // 2}
    sentences.update(r[0] for r in rows)
  header, rows = _tsv("test.tsv")
  assert header == ["index", "sentence"]
  assert [r[0] for r in rows] == [str(i) for i in range(100)] and all(len(r) == 2 for r in rows)
  sentences.update(r[1] for r in rows)
  assert max(sentences.values()) == 1, "a sentence appears twice across the splits"


def test_vocab_is_rebuilt_identically_and_covers_the_data(tmp_path):
  vocab_builder = pytest.importorskip("tokenization.vocab_builder")
  # The command documented in README.md.
  tokens = vocab_builder.build_vocab_file(
      f"{SAMPLE / 'corpus.txt'},{SAMPLE / 'sentiment' / 'train.tsv'}", str(tmp_path / "vocab.txt"),
      vocab_size=3000, do_lower_case=True, min_frequency=2)
  assert list(load_vocab(str(SAMPLE / "vocab.txt"))) == tokens
  assert 2000 <= len(tokens) <= 4000
  tok = FullTokenizer(str(SAMPLE / "vocab.txt"), do_lower_case=True)
  for path in (SAMPLE / "corpus.txt", *sorted((SAMPLE / "sentiment").glob("*.tsv"))):
    assert "[UNK]" not in tok.tokenize(path.read_text(encoding="utf-8")), path
