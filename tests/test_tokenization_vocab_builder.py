"""Tests for tokenization.vocab_builder and the build_vocab.py CLI."""

import subprocess
import sys

import pytest

from tests.paths import REPO
from tokenization import FullTokenizer, load_vocab
from tokenization import vocab_builder

CORPUS = """The quick brown fox jumps over the lazy dog.
A naïve visitor ordered coffee at the café, then another coffee.

Running runners run quickly; the runner's shoes were running shoes!
Numbers like 42, 3.5 and 2026 appear too: jumping, jumped, jumps.
"""


@pytest.fixture()
def corpus(tmp_path):
  path = tmp_path / "corpus.txt"
  path.write_text(CORPUS * 3, encoding="utf-8")
  return path


def _build(corpus, out, vocab_size=200, min_frequency=2):
  return vocab_builder.build_vocab_file(str(corpus), str(out), vocab_size,
                                        min_frequency=min_frequency)


def test_special_tokens_at_google_ids(corpus, tmp_path):
  tokens = _build(corpus, tmp_path / "vocab.txt")
  vocab = load_vocab(str(tmp_path / "vocab.txt"))
  assert list(vocab) == tokens
  assert vocab["[PAD]"] == 0
  assert [vocab[f"[unused{i}]"] for i in range(10)] == list(range(1, 11))
  assert [vocab[t] for t in ("[UNK]", "[CLS]", "[SEP]", "[MASK]")] == [11, 12, 13, 14]


def test_layout_chars_then_joined_chars_then_pieces(corpus, tmp_path):
  tokens = _build(corpus, tmp_path / "vocab.txt")
  chars = sorted(set("".join(vocab_builder.count_words([str(corpus)]))))
  n = len(chars)
  assert tokens[15:15 + n] == chars
  assert tokens[15 + n:15 + 2 * n] == ["##" + c for c in chars]
  pieces = tokens[15 + 2 * n:]
  assert "the" in pieces and "coffee" in pieces
  assert len(set(tokens)) == len(tokens) <= 200
  # Accents are stripped for an uncased vocabulary.
  assert "é" not in tokens and "cafe" in pieces


def test_no_unk_on_training_text_and_words_are_pieces(corpus, tmp_path):
  _build(corpus, tmp_path / "vocab.txt")
  tok = FullTokenizer(str(tmp_path / "vocab.txt"), do_lower_case=True)
  tokens = tok.tokenize(CORPUS)
  assert "[UNK]" not in tokens
  assert tok.tokenize("The runner ordered coffee.") == ["the", "runner", "ordered", "coffee", "."]
  # A word made of known characters splits into pieces rather than [UNK].
  assert "[UNK]" not in tok.tokenize("quiz dogfox")


def test_deterministic(corpus, tmp_path):
  _build(corpus, tmp_path / "a.txt")
  _build(corpus, tmp_path / "b.txt")
  assert (tmp_path / "a.txt").read_bytes() == (tmp_path / "b.txt").read_bytes()


def test_min_frequency_limits_pieces(corpus, tmp_path):
  low = _build(corpus, tmp_path / "a.txt", vocab_size=5000, min_frequency=1)
  high = _build(corpus, tmp_path / "b.txt", vocab_size=5000, min_frequency=100)
  assert len(high) < len(low)
  assert "coffee" in low and "coffee" not in high  # seen 6 times


def test_vocab_size_is_a_hard_limit(corpus, tmp_path):
  full = _build(corpus, tmp_path / "a.txt", vocab_size=5000, min_frequency=1)
  limit = len(full) - 10  # the learner's own search overshoots to len(full) here
  small = _build(corpus, tmp_path / "b.txt", vocab_size=limit, min_frequency=1)
  assert len(small) == limit and small[:15] == full[:15]
  assert "[UNK]" not in FullTokenizer(str(tmp_path / "b.txt")).tokenize(CORPUS)


def test_no_matching_file_is_an_error(tmp_path):
  with pytest.raises(ValueError, match=r"--input_file pattern .*nothing\*\.txt' matches no file"):
    vocab_builder.build_vocab_file(str(tmp_path / "nothing*.txt"), str(tmp_path / "v.txt"), 100)
  assert not (tmp_path / "v.txt").exists()


def test_empty_input_is_an_error(tmp_path):
  (tmp_path / "empty.txt").write_text("\n  \n", encoding="utf-8")
  with pytest.raises(ValueError, match=r"--input_file .*empty\.txt holds no words"):
    vocab_builder.build_vocab_file(str(tmp_path / "empty.txt"), str(tmp_path / "v.txt"), 100)


def test_bad_utf8_names_file_and_line(tmp_path):
  (tmp_path / "bad.txt").write_bytes(b"fine\nbad \xff byte\n")
  with pytest.raises(ValueError, match=r"bad\.txt:2: not valid UTF-8"):
    vocab_builder.build_vocab_file(str(tmp_path / "bad.txt"), str(tmp_path / "v.txt"), 100)


def test_an_existing_output_needs_overwrite_and_an_input_is_never_one(corpus, tmp_path):
  (tmp_path / "mine.txt").write_text("mine\n")
  with pytest.raises(ValueError, match=r"output file exists: .*mine\.txt.* --overwrite"):
    _build(corpus, tmp_path / "mine.txt")
  with pytest.raises(ValueError, match=r"corpus\.txt' is also an input \(--input_file\)"):
    vocab_builder.build_vocab_file(str(corpus), str(corpus), 200, overwrite=True)
  assert (tmp_path / "mine.txt").read_text() == "mine\n"
  assert corpus.read_text(encoding="utf-8") == CORPUS * 3
  assert len(vocab_builder.build_vocab_file(str(corpus), str(tmp_path / "mine.txt"), 200,
                                            overwrite=True)) > 100


def test_min_frequency_must_be_positive(corpus, tmp_path):
  with pytest.raises(ValueError, match="--min_frequency must be positive, got 0"):
    _build(corpus, tmp_path / "v.txt", min_frequency=0)


def test_vocab_size_too_small_is_an_error(corpus, tmp_path):
  with pytest.raises(ValueError, match="vocab_size 20 is too small"):
    _build(corpus, tmp_path / "v.txt", vocab_size=20)
  assert list(tmp_path.iterdir()) == [corpus]  # no output, no temp file left


@pytest.mark.multiprocess
def test_cli(corpus, tmp_path):
  out = tmp_path / "vocab.txt"
  subprocess.run(
      [sys.executable, str(REPO / "build_vocab.py"), f"--input_file={corpus},{corpus}",
       f"--output_file={out}", "--vocab_size=150", "--min_frequency=2"],
      check=True, cwd=REPO, capture_output=True)
  # A file matched twice is read once.
  assert list(load_vocab(str(out))) == _build(corpus, tmp_path / "ref.txt", vocab_size=150)
