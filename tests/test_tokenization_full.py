"""The pure-Python tokenizer against hand-checked expectations of Google's rules."""

import pathlib
import random

import numpy as np
import pytest

from tests import char_port
from tokenization import (BasicTokenizer, FullTokenizer, VocabError, WordpieceTokenizer,
                          load_vocab, validate_case_matches_checkpoint)


@pytest.fixture(scope="module")
def uncased(google_vocab):
  return FullTokenizer(vocab_file=google_vocab, do_lower_case=True)


@pytest.fixture()
def cased_vocab(tmp_path):
  tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "H", "h", "##é", "##e", "##llo",
            "hello", "Hello", "caf", ",", "!"]
  path = tmp_path / "cased_vocab.txt"
  path.write_text("\n".join(tokens) + "\n", encoding="utf-8")
  return str(path)


# --- BasicTokenizer rules -------------------------------------------------------------------

@pytest.mark.parametrize("text,expected", [
    ("Héllo", ["hello"]),                          # lower-case + accent stripping
    ("naïve café ÀÉÎÕÜ", ["naive", "cafe", "aeiou"]),
    ("中文字", ["中", "文", "字"]),                   # CJK ideographs split one by one
    ("ab中cd", ["ab", "中", "cd"]),
    ("\U00020000x", ["\U00020000", "x"]),          # CJK Extension B
    ("\uf900x", ["\u8c48", "x"]),                   # compatibility ideograph: split, then NFD
    ("hi😀there 😀", ["hi😀there", "😀"]),          # emoji are neither punctuation nor CJK
    ("a\x00b\ufffdc\x07d\u200be", ["abcde"]),      # NUL, U+FFFD, Cc and Cf (ZWSP) dropped
    ("a\tb\nc\rd\u00a0e\u3000f\u2028g", ["a", "b", "c", "d", "e", "f", "g"]),  # whitespace
    ("$5^2`x~y|z", ["$", "5", "^", "2", "`", "x", "~", "y", "|", "z"]),  # ASCII symbols
    ("don't «stop»—now¿", ["don", "'", "t", "«", "stop", "»", "—", "now", "¿"]),
    ("[CLS] a [MASK]", ["[", "cls", "]", "a", "[", "mask", "]"]),  # not special in raw text
    ("  \t ", []),
    ("", []),
])
def test_basic_tokenizer_uncased(text, expected):
  assert BasicTokenizer(do_lower_case=True).tokenize(text) == expected


def test_basic_tokenizer_leaves_kana_and_hangul_whole():
  assert BasicTokenizer(do_lower_case=False).tokenize("こんにちは 안녕") == ["こんにちは", "안녕"]


def test_basic_tokenizer_cased_keeps_case_and_accents():
  assert BasicTokenizer(do_lower_case=False).tokenize("Héllo, World!") == [
      "Héllo", ",", "World", "!"]


def test_lower_casing_happens_before_punctuation_split():
  # Python lower-cases a sigma before "." + letter as medial (σ), at a word end as final (ς).
  assert BasicTokenizer(True).tokenize("ΑΣ.Β ΟΔΟΣ") == ["ασ", ".", "β", "οδος"]
  assert BasicTokenizer(True).tokenize("ΑΣ.Β")[0] == "α\u03c3"
  assert BasicTokenizer(True).tokenize("ΟΔΟΣ")[0][-1] == "\u03c2"


def test_punctuation_judged_after_accent_stripping():
  # U+1FEF GREEK VARIA (Sk, not punctuation) decomposes to "`" (ASCII punctuation) under NFD.
  assert BasicTokenizer(True).tokenize("a\u1fefb") == ["a", "`", "b"]
  assert BasicTokenizer(False).tokenize("a\u1fefb") == ["a\u1fefb"]


def test_bytes_input_is_decoded_as_utf8_dropping_invalid_bytes():
  assert BasicTokenizer(True).tokenize("Café".encode("utf-8") + b"\xff!") == ["cafe", "!"]
  with pytest.raises(TypeError, match="str or bytes"):
    BasicTokenizer(True).tokenize(42)


# --- WordPiece ------------------------------------------------------------------------------

def test_full_tokenizer_known_sentences(uncased):
  assert uncased.tokenize("Hello, World! Unaffable penguins don't fly.") == [
      "hello", ",", "world", "!", "una", "##ffa", "##ble", "penguins", "don", "'", "t", "fly", "."]
  assert uncased.tokenize("Café Déjà vu: 3.14 apples cost $5.") == [
      "cafe", "de", "##ja", "vu", ":", "3", ".", "14", "apples", "cost", "$", "5", "."]


def test_uncoverable_word_becomes_one_unk(uncased):
  assert "☃" not in uncased.vocab and "##x" in uncased.vocab
  assert uncased.tokenize("☃x") == ["[UNK]"]
  assert uncased.tokenize("hi😀there ok") == ["[UNK]", "ok"]
  assert uncased.tokenize("中文字") == ["中", "文", "[UNK]"]


@pytest.mark.parametrize("n,is_unk", [(199, False), (200, False), (201, True)])
def test_word_length_limit_is_200_characters(uncased, n, is_unk):
  pieces = uncased.tokenize("a" * n)
  if is_unk:
    assert pieces == ["[UNK]"]
  else:
    assert "".join(p.removeprefix("##") for p in pieces) == "a" * n
    assert pieces[0] == "aaa" and all(p == "##aa" for p in pieces[1:-1])


def test_word_length_limit_counts_characters_not_bytes(uncased):
  # 200 two-byte characters are 400 bytes but still within the 200-character limit.
  assert uncased.tokenize("é" * 200) != ["[UNK]"]
  assert uncased.tokenize("é" * 201) == ["[UNK]"]


def test_longest_match_first():
  vocab = {"[UNK]": 0, "un": 1, "una": 2, "##ff": 3, "##ffable": 4, "##able": 5, "##a": 6}
  wp = WordpieceTokenizer(vocab)
  assert wp.tokenize("unaffable") == ["una", "##ffable"]
  # Greedy without backtracking: "una" is taken, "##ble" is missing, so the word is lost even
  # though "un" + "##able" would cover it (Google's behaviour).
  assert wp.tokenize("unable") == ["[UNK]"]
  assert wp.tokenize("unax") == ["[UNK]"]


def test_cased_full_tokenizer(cased_vocab):
  tok = FullTokenizer(vocab_file=cased_vocab, do_lower_case=False)
  assert tok.tokenize("Héllo, Hello hello!") == ["H", "##é", "##llo", ",", "Hello", "hello", "!"]
  assert tok.tokenize("cafe") == ["caf", "##e"]


def test_ids_round_trip(uncased):
  tokens = uncased.tokenize("The man went to the store.")
  ids = uncased.convert_tokens_to_ids(tokens)
  assert ids == [1996, 2158, 2253, 2000, 1996, 3573, 1012]
  assert uncased.convert_ids_to_tokens(ids) == tokens
  assert uncased.convert_tokens_to_ids(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]) == [
      0, 100, 101, 102, 103]


def test_unknown_token_and_id_errors_name_them(uncased):
  with pytest.raises(KeyError, match="'notatoken' is not in the vocabulary"):
    uncased.convert_tokens_to_ids(["the", "notatoken"])
  with pytest.raises(KeyError, match="id 30522 is out of range"):
    uncased.convert_ids_to_tokens([30522])


# --- Against reference data -----------------------------------------------------------------

def test_matches_tokens_of_google_and_hf_on_minilm_reference(shared_dir, uncased):
  ref = np.load(shared_dir / "fixtures" / "minilm_reference.npz")
  for a, b, is_pair, tokens, ids, mask in zip(ref["text_a"], ref["text_b"], ref["is_pair"],
                                              ref["tokens"], ref["input_ids"],
                                              ref["attention_mask"]):
    ours = ["[CLS]"] + uncased.tokenize(str(a)) + ["[SEP]"]
    if is_pair:
      ours += uncased.tokenize(str(b)) + ["[SEP]"]
    assert ours == str(tokens).split()
    assert uncased.convert_tokens_to_ids(ours) == ids[mask == 1].tolist()


def test_fast_path_equals_char_by_char_port_on_corpus(shared_dir, google_vocab, uncased):
  vocab = load_vocab(google_vocab)
  cased = FullTokenizer(google_vocab, do_lower_case=False)
  corpus = shared_dir / "data" / "corpus"
  lines = []
  for name in ("gutenberg_heldout.txt", "wikitext2_valid.txt"):
    lines += (corpus / name).read_text(encoding="utf-8").splitlines()
  assert len(lines) == 15688  # 15,456 sentences + 232 document breaks
  for line in lines:
    assert uncased.tokenize(line) == char_port.full_tokenize(line, vocab, True), line
  for line in lines[::10]:
    assert cased.tokenize(line) == char_port.full_tokenize(line, vocab, False), line


def test_fast_path_equals_char_by_char_port_on_random_unicode(google_vocab):
  vocab = load_vocab(google_vocab)
  tokenizers = {lower: FullTokenizer(google_vocab, do_lower_case=lower) for lower in (True, False)}
  rng = random.Random(1234)
  code_points = (list(range(0, 0x250)) + list(range(0x370, 0x400)) + list(range(0x1E00, 0x2100))
                 + list(range(0x3000, 0x3100)) + list(range(0x4E00, 0x4E40))
                 + [0xFFFD, 0x200B, 0x2028, 0x2029, 0xF900, 0x1FEF, 0x130, 0x1F600, 0xAC00,
                    0x20000, 0xFEFF, 0x0301, 0x0085])
  pool = [chr(c) for c in code_points]
  for _ in range(5000):
    text = "".join(rng.choice(pool) for _ in range(rng.randint(0, 24)))
    for lower, tok in tokenizers.items():
      assert tok.tokenize(text) == char_port.full_tokenize(text, vocab, lower), repr(text)


# --- Vocabulary files -----------------------------------------------------------------------

def test_vocab_loads_in_file_order_with_trailing_whitespace_stripped(tmp_path):
  path = tmp_path / "v.txt"
  path.write_bytes(b"[PAD]\r\n[UNK]  \nhello\t\n##lo\n")
  assert list(load_vocab(str(path)).items()) == [("[PAD]", 0), ("[UNK]", 1), ("hello", 2),
                                                 ("##lo", 3)]


def test_google_vocab_size(google_vocab):
  assert len(load_vocab(google_vocab)) == 30522


@pytest.mark.parametrize("content,message", [
    (b"", r"vocab file is empty: '.*v\.txt'"),
    (b"a\nb\na\n", r"v\.txt:3: duplicate token 'a' \(first seen at line 1\)"),
    (b"a\n\nb\n", r"v\.txt:2: blank line"),
    (b"a\n\xff\n", r"v\.txt:2: not valid UTF-8"),
])
def test_bad_vocab_errors_name_file_and_line(tmp_path, content, message):
  path = tmp_path / "v.txt"
  path.write_bytes(content)
  with pytest.raises(VocabError, match=message):
    FullTokenizer(vocab_file=str(path), do_lower_case=True)


def test_missing_vocab_error_names_file(tmp_path):
  with pytest.raises(VocabError, match="vocab file .*nope.txt': not found"):
    load_vocab(str(tmp_path / "nope.txt"))
  with pytest.raises(VocabError, match="vocab file .*: a directory, not a file"):
    load_vocab(str(tmp_path))


# --- Checkpoint name vs do_lower_case -------------------------------------------------------

@pytest.mark.parametrize("ckpt,lower,ok", [
    ("/m/uncased_L-12_H-768_A-12/bert_model.ckpt", True, True),
    ("/m/uncased_L-12_H-768_A-12/bert_model.ckpt", False, False),
    ("/m/cased_L-24_H-1024_A-16/bert_model.ckpt", False, True),
    ("/m/cased_L-24_H-1024_A-16/bert_model.ckpt", True, False),
    ("gs://b/multi_cased_L-12_H-768_A-12/bert_model.ckpt", True, False),
    ("/m/chinese_L-12_H-768_A-12/bert_model.ckpt", False, False),
    ("/m/my_finetuned_model/bert_model.ckpt", False, True),
    ("/m/uncased_L-12_H-768_A-12/model.ckpt-1000", False, True),
    ("", False, True),
    (None, True, True),
    (pathlib.Path("/m/uncased_L-12_H-768_A-12/bert_model.ckpt"), False, False),
])
def test_validate_case_matches_checkpoint(ckpt, lower, ok):
  if ok:
    validate_case_matches_checkpoint(lower, ckpt)
  else:
    with pytest.raises(ValueError, match=f"do_lower_case={lower} does not match"):
      validate_case_matches_checkpoint(lower, ckpt)
