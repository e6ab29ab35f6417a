"""The in-graph tokenizer against the Python `FullTokenizer` and Google's packed references.

The ids equal FullTokenizer's on every line of ../shared/data/corpus/ (158,745 lines; cased
on gutenberg_heldout.txt), on 60,000 random Unicode strings and on 20,000 random byte
strings with invalid UTF-8. Every code point of planes 0-3 and 14 outside private use,
placed between two letters, shows that they differ exactly at the documented code points
(`in_graph.NEWER_PUNCTUATION`, `NOT_LOWERCASED`, `NEWER_DECOMPOSITIONS`). Also: words of
199-450 characters of 1-, 2- and 4-byte characters, Google's cleaning rules and truncation,
packing against the google_bert_tiny and MiniLM references, tf.data, a SavedModel round
trip, vocabulary errors.
"""

import random
import unicodedata

import numpy as np
import pytest
import tensorflow as tf

from tokenization import FullTokenizer, VocabError, load_vocab
from tokenization import in_graph
from tokenization.chars import is_control
from tokenization.in_graph import InGraphTokenizer

CORPUS_FILES = ("gutenberg_train.txt", "gutenberg_heldout.txt", "wikitext2_valid.txt",
                "wikitext-2-raw/wiki.valid.raw")
# Lines (blank ones included) of CORPUS_FILES, per `wc -l`.
CORPUS_LINES = 139_297 + 7_646 + 8_042 + 3_760

# Every code point assigned in any Unicode version to date, outside private
# use, lies in planes 0-3 or 14.
CODE_POINTS = [cp for cp in [*range(0x40000), *range(0xE0000, 0xE1000)]
               if not 0xD800 <= cp <= 0xDFFF and unicodedata.category(chr(cp)) != "Co"]


@pytest.fixture(scope="module")
def uncased(google_vocab):
  return FullTokenizer(google_vocab, do_lower_case=True), InGraphTokenizer(google_vocab, True)


@pytest.fixture(scope="module")
def cased_vocab(google_vocab, tmp_path_factory):
  """Google's uncased vocab plus the capitalised and upper-cased form of each whole word."""
  vocab = list(load_vocab(google_vocab))
  seen = set(vocab)
  for token in list(vocab):
    if token.isalpha():
      for form in (token.capitalize(), token.upper()):
        if form not in seen:
          seen.add(form)
          vocab.append(form)
  path = tmp_path_factory.mktemp("cased") / "vocab.txt"
  path.write_text("\n".join(vocab) + "\n", encoding="utf-8")
  return str(path)


@pytest.fixture(scope="module")
def tiny_vocab(tmp_path_factory):
  path = tmp_path_factory.mktemp("tiny") / "vocab.txt"
  path.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\na\n##a\n", encoding="utf-8")
  return str(path)


def tokenize_in_batches(tokenizer, texts, batch_size=8192):
  """Flat ids and row lengths of `texts` through the in-graph tokenizer, graph mode."""
  fn = tf.function(tokenizer.tokenize)
  flat, lengths = [], []
  for i in range(0, len(texts), batch_size):
    ids = fn(tf.constant(texts[i:i + batch_size]))
    flat.append(ids.flat_values.numpy())
    lengths.append(ids.row_lengths().numpy())
  return np.concatenate(flat), np.concatenate(lengths)


def disagreements(python_tokenizer, tokenizer, texts):
  """Indices of `texts` whose in-graph ids differ from the Python tokenizer's."""
  expected = [python_tokenizer.convert_tokens_to_ids(python_tokenizer.tokenize(t)) for t in texts]
  flat, lengths = tokenize_in_batches(tokenizer, texts)
  if np.array_equal(lengths, [len(e) for e in expected]) and np.array_equal(
      flat, np.fromiter((i for e in expected for i in e), np.int32, count=len(flat))):
    return []
  ends = np.cumsum(lengths)
  return [i for i, e in enumerate(expected) if flat[ends[i] - lengths[i]:ends[i]].tolist() != e]


def has_documented_difference(text, do_lower_case):
  differing = in_graph.differing_code_points(do_lower_case)
  return any(ord(ch) in differing for ch in text)


@pytest.mark.slow
def test_every_corpus_line_agrees(uncased, shared_dir):
  python_tokenizer, tokenizer = uncased
  lines = []
  for name in CORPUS_FILES:
    with open(shared_dir / "data" / "corpus" / name, encoding="utf-8") as f:
      lines.extend(line.rstrip("\n") for line in f)
  assert len(lines) == CORPUS_LINES
  bad = disagreements(python_tokenizer, tokenizer, lines)
  print(f"{len(lines)} corpus lines, {len(bad)} disagreements")
  assert all(has_documented_difference(lines[i], True) for i in bad), [lines[i] for i in bad[:5]]


def test_cased_agreement_on_corpus_sample(cased_vocab, shared_dir):
  python_tokenizer = FullTokenizer(cased_vocab, do_lower_case=False)
  tokenizer = InGraphTokenizer(cased_vocab, do_lower_case=False)
  with open(shared_dir / "data" / "corpus" / "gutenberg_heldout.txt", encoding="utf-8") as f:
    lines = f.read().splitlines()
  ids = tokenizer.tokenize(["Hello World", "The Cat"]).to_list()
  assert ids == [python_tokenizer.convert_tokens_to_ids(t) for t in (["Hello", "World"],
                                                                      ["The", "Cat"])]
  assert disagreements(python_tokenizer, tokenizer, lines) == []


def random_text(rng, exclude):
  """A random string mixing scripts, marks, spaces, controls, symbols and any code point."""
  pools = [(0x20, 0x7E)] * 6 + [
      (0xA0, 0x24F), (0x300, 0x36F), (0x370, 0x4FF), (0x600, 0x6FF), (0x900, 0x97F),
      (0x2000, 0x206F), (0x2100, 0x22FF), (0x3040, 0x30FF), (0x4E00, 0x4E80), (0xAC00, 0xAC40),
      (0xFB00, 0xFB06), (0xFF00, 0xFFEF), (0x1F300, 0x1F64F), (0x0, 0x2FFF), (0x10000, 0x1FFFF),
      (0x0, 0x10FFFF)]
  special = "\t\n\r \x00\x1c\x85\xa0\xad\u2028\u2029\u200b\u200d\ufeff\ufffdİΣßẞǅ"
  length = rng.randint(1, 40)
  chars = []
  while len(chars) < length:
    if rng.random() < 0.1:
      ch = rng.choice(special)
    else:
      ch = chr(rng.randint(*rng.choice(pools)))
    if not 0xD800 <= ord(ch) <= 0xDFFF and ord(ch) not in exclude:
      chars.append(ch)
  return "".join(chars)


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_random_unicode_agrees_off_the_documented_code_points(do_lower_case, google_vocab,
                                                               cased_vocab):
  vocab = google_vocab if do_lower_case else cased_vocab
  rng = random.Random(1234)
  texts = [random_text(rng, in_graph.differing_code_points(do_lower_case))
           for _ in range(30_000)]
  python_tokenizer = FullTokenizer(vocab, do_lower_case)
  tokenizer = InGraphTokenizer(vocab, do_lower_case)
  assert [texts[i] for i in disagreements(python_tokenizer, tokenizer, texts)] == []


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_word_splitting_differs_exactly_at_newer_punctuation(do_lower_case, tiny_vocab):
  """`a<c>a` for every code point: whitespace, split off, or inside the word."""
  texts = [f"a{chr(cp)}a" for cp in CODE_POINTS]
  bad = disagreements(FullTokenizer(tiny_vocab, do_lower_case),
                      InGraphTokenizer(tiny_vocab, do_lower_case), texts)
  assert {CODE_POINTS[i] for i in bad} == in_graph.NEWER_PUNCTUATION


def google_normalize(text, do_lower_case):
  """Google's deletions, and for uncased its lower-casing and accent stripping."""
  text = "".join(ch for ch in text if ch not in "\x00\ufffd" and not is_control(ch))
  if do_lower_case:
    text = "".join(ch for ch in unicodedata.normalize("NFD", text.lower())
                   if unicodedata.category(ch) != "Mn")
  return text


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_normalization_differs_exactly_at_documented_code_points(do_lower_case, tiny_vocab):
  tokenizer = InGraphTokenizer(tiny_vocab, do_lower_case)
  texts = [f"a{chr(cp)}Z" for cp in CODE_POINTS]
  normalized = tf.function(tokenizer.normalize)(tf.constant(texts)).numpy()
  normalized = [t.decode("utf-8") for t in normalized]
  differing = {cp for cp, text, got in zip(CODE_POINTS, texts, normalized)
               if got != google_normalize(text, do_lower_case)}
  expected = in_graph.NOT_LOWERCASED | in_graph.NEWER_DECOMPOSITIONS if do_lower_case else set()
  assert differing == expected


def test_documented_differences_on_words(google_vocab, cased_vocab):
  uncased = InGraphTokenizer(google_vocab, True)
  cased = InGraphTokenizer(cased_vocab, False)
  python_uncased = FullTokenizer(google_vocab, True)
  # U+11F43 (Kawi danda, Unicode 15) splits the word in-graph only.
  text = "the\U00011f43cat"
  assert python_uncased.tokenize(text) == ["[UNK]"]
  assert uncased.tokenize([text]).to_list() == [python_uncased.convert_tokens_to_ids(
      ["the", "[UNK]", "cat"])]
  python_cased = FullTokenizer(cased_vocab, False)
  assert python_cased.tokenize("The\U00011f43Cat") == ["[UNK]"]
  assert cased.tokenize(["The\U00011f43Cat"]).to_list() == [python_cased.convert_tokens_to_ids(
      ["The", "[UNK]", "Cat"])]
  # U+A7C0 (Latin capital old Polish o, Unicode 14) is lower-cased by Python only.
  assert unicodedata.normalize("NFD", "\ua7c0").lower() != "\ua7c0"
  assert uncased.normalize(["\ua7c0"]).numpy()[0].decode() == "\ua7c0"


def test_google_cleaning_rules(uncased):
  python_tokenizer, tokenizer = uncased
  texts = ["co\u00adoperate", "zero\u200bwidth", "a\x00b\ufffdc", "\ufeffbom", "tab\tline\nx\ry",
           "para\u2029graph\u2028line", "No\u00a0break", "4½ per cent …", "Café Déjà VU",
           "İstanbul ΟΔΟΣ σοφός", "中文字符 ｶﾀｶﾅ 한국어", "don't $5.00 a--b", "ﬁnal ﬂow"]
  expected = [python_tokenizer.convert_tokens_to_ids(python_tokenizer.tokenize(t))
              for t in texts]
  assert tokenizer.tokenize(texts).to_list() == expected
  assert python_tokenizer.tokenize("co\u00adoperate") == ["cooperate"]
  assert python_tokenizer.tokenize("4½ …") == ["4", "##½", "…"]


def random_bytes(rng):
  """Bytes mixing valid UTF-8 with stray, truncated, surrogate and out-of-range sequences."""
  chunks = []
  for _ in range(rng.randint(1, 12)):
    r = rng.random()
    if r < 0.8:
      chunks.append(rng.choice(["the ", "café ", "\u2019", " ", ".", "Σ"]).encode("utf-8"))
    elif r < 0.85:
      chunks.append(bytes([rng.randint(0x80, 0xFF)]))
    elif r < 0.9:
      chunk = chr(rng.randint(0x80, 0x10FFFF)).encode("utf-8", "surrogatepass")
      chunks.append(chunk[:rng.randint(1, len(chunk))])
    elif r < 0.95:
      chunks.append(rng.choice([b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf"]))
    else:
      chunks.append(bytes(rng.randint(0, 255) for _ in range(rng.randint(1, 4))))
  return b"".join(chunks)


def test_invalid_utf8_bytes_are_dropped_as_in_python(uncased):
  python_tokenizer, tokenizer = uncased
  rng = random.Random(7)
  texts = [random_bytes(rng) for _ in range(20_000)]

  def python_valid(b):
    try:
      b.decode("utf-8")
      return True
    except UnicodeDecodeError:
      return False

  valid = [python_valid(b) for b in texts]
  assert 0.1 < sum(valid) / len(valid) < 0.9
  assert in_graph.is_valid_utf8(texts).numpy().tolist() == valid
  # A batch of valid strings skips the transcoding; mixed batches take it.
  texts = [b for b, v in zip(texts, valid) if v] + texts
  assert disagreements(python_tokenizer, tokenizer, texts) == []
  assert python_tokenizer.tokenize(b"caf\xe9 ok") == ["caf", "ok"]


def test_words_over_200_characters_become_unk(tmp_path):
  path = tmp_path / "vocab.txt"
  path.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\na\n##a\nα\n##α\n\U0001d49c\n##\U0001d49c\n",
                  encoding="utf-8")
  python_tokenizer = FullTokenizer(str(path), do_lower_case=False)
  tokenizer = InGraphTokenizer(str(path), do_lower_case=False)
  texts = []
  for ch in ("a", "α", "\U0001d49c"):  # 1, 2 and 4 UTF-8 bytes
    for n in (199, 200, 201, 450):
      texts.append(f"{ch * n} a {ch * n},{ch}")
  expected = [python_tokenizer.convert_tokens_to_ids(python_tokenizer.tokenize(t))
              for t in texts]
  assert expected[1][:2] == [4, 5] and expected[2][:2] == [1, 4]  # 200 fits, 201 is [UNK]
  assert tokenizer.tokenize(texts).to_list() == expected
  # Batches with and without long words take different branches.
  assert tokenizer.tokenize(texts[:2]).to_list() == expected[:2]


def google_truncate_seq_pair(len_a, len_b, budget):
  """Google's loop, on lengths."""
  while len_a + len_b > budget:
    if len_a > len_b:
      len_a -= 1
    else:
      len_b -= 1
  return len_a, len_b


def test_truncated_lengths_match_google_loop():
  pairs = [(a, b, budget) for a in range(25) for b in range(25) for budget in range(20)]
  got_a, got_b = in_graph.truncated_lengths(*(tf.constant(x) for x in zip(*pairs)))
  assert list(zip(got_a.numpy(), got_b.numpy())) == [
      google_truncate_seq_pair(*p) for p in pairs]


def test_pack_single_and_pair_exact():
  ids_a = tf.ragged.constant([[5, 6, 7, 8, 9], [5], [5, 6, 7, 8, 9, 10, 11]], tf.int32)
  ids_b = tf.ragged.constant([[20, 21], [], [20, 21, 22, 23, 24, 25]], tf.int32)
  single = in_graph.pack(ids_a, None, 6, cls_id=1, sep_id=2)
  np.testing.assert_array_equal(single["input_ids"], [[1, 5, 6, 7, 8, 2], [1, 5, 2, 0, 0, 0],
                                                      [1, 5, 6, 7, 8, 2]])
  np.testing.assert_array_equal(single["input_mask"], [[1] * 6, [1, 1, 1, 0, 0, 0], [1] * 6])
  np.testing.assert_array_equal(single["segment_ids"], np.zeros([3, 6]))
  pair = in_graph.pack(ids_a, ids_b, 10, cls_id=1, sep_id=2)
  # Row 0: A (5) is the longer and is cut to 5; row 1: empty B packs as single;
  # row 2: both long, budget 7 -> A 4, B 3.
  np.testing.assert_array_equal(pair["input_ids"], [
      [1, 5, 6, 7, 8, 9, 2, 20, 21, 2],
      [1, 5, 2, 0, 0, 0, 0, 0, 0, 0],
      [1, 5, 6, 7, 8, 2, 20, 21, 22, 2]])
  np.testing.assert_array_equal(pair["input_mask"], [[1] * 10, [1, 1, 1] + [0] * 7, [1] * 10])
  np.testing.assert_array_equal(pair["segment_ids"], [
      [0, 0, 0, 0, 0, 0, 0, 1, 1, 1], [0] * 10, [0, 0, 0, 0, 0, 0, 1, 1, 1, 1]])
  for value in pair.values():
    assert value.dtype == tf.int32 and value.shape == (3, 10)
  with pytest.raises(ValueError, match="at least 3"):
    in_graph.pack(ids_a, ids_b, 2, cls_id=1, sep_id=2)


def pack_texts(tokenizer, texts_a, texts_b, max_seq_length):
  """Packed inputs of each row, as pairs where `texts_b` is non-empty."""
  return tokenizer.pack(tokenizer.tokenize(texts_a), tokenizer.tokenize(texts_b),
                        max_seq_length)


def test_matches_google_bert_tiny_reference(google_vocab, shared_dir):
  ref = np.load(shared_dir / "fixtures" / "google_bert_tiny" / "reference.npz")
  # input_ids are stored after masking: put the original ids back.
  expected = ref["input_ids"].copy()
  for row in range(expected.shape[0]):
    real = ref["masked_lm_weights"][row] == 1.0
    expected[row, ref["masked_lm_positions"][row][real]] = ref["masked_lm_ids"][row][real]
  tokenizer = InGraphTokenizer(google_vocab, True)
  packed = pack_texts(tokenizer, ref["texts_a"].tolist(), ref["texts_b"].tolist(), 32)
  np.testing.assert_array_equal(packed["input_ids"], expected)
  np.testing.assert_array_equal(packed["input_mask"], ref["input_mask"])
  np.testing.assert_array_equal(packed["segment_ids"], ref["segment_ids"])


@pytest.fixture(scope="module")
def minilm_ref(shared_dir):
  return np.load(shared_dir / "fixtures" / "minilm_reference.npz")


def test_matches_minilm_reference(google_vocab, minilm_ref):
  # The MiniLM vocab is the google_bert_tiny vocab.txt (same 30,522 tokens).
  tokenizer = InGraphTokenizer(google_vocab, True)
  packed = pack_texts(tokenizer, minilm_ref["text_a"].tolist(), minilm_ref["text_b"].tolist(),
                      64)
  np.testing.assert_array_equal(packed["input_ids"], minilm_ref["input_ids"])
  np.testing.assert_array_equal(packed["input_mask"], minilm_ref["attention_mask"])
  np.testing.assert_array_equal(packed["segment_ids"], minilm_ref["token_type_ids"])
  assert not minilm_ref["is_pair"].all() and minilm_ref["is_pair"].any()


def test_inside_tf_data(google_vocab, minilm_ref):
  tokenizer = InGraphTokenizer(google_vocab, True)
  texts = tf.data.Dataset.from_tensor_slices(
      (minilm_ref["text_a"].tolist(), minilm_ref["text_b"].tolist()))
  dataset = texts.batch(3).map(lambda a, b: pack_texts(tokenizer, a, b, 64),
                               num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
  batches = list(dataset.as_numpy_iterator())
  assert [len(b["input_ids"]) for b in batches] == [3, 3, 2]
  for key, ref_key in (("input_ids", "input_ids"), ("input_mask", "attention_mask"),
                       ("segment_ids", "token_type_ids")):
    np.testing.assert_array_equal(np.concatenate([b[key] for b in batches]), minilm_ref[ref_key])
  single = tf.data.Dataset.from_tensor_slices(minilm_ref["text_a"].tolist()).batch(4).map(
      tokenizer.tokenize)
  assert [ids for batch in single for ids in batch.to_list()] == (
      tokenizer.tokenize(minilm_ref["text_a"].tolist()).to_list())


class Preprocessor(tf.Module):
  """What a user would export: strings in, BERT inputs out."""

  def __init__(self, tokenizer, max_seq_length):
    super().__init__()
    self.tokenizer = tokenizer
    self.max_seq_length = max_seq_length

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string)] * 2)
  def __call__(self, text_a, text_b):
    return pack_texts(self.tokenizer, text_a, text_b, self.max_seq_length)

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
  def tokenize(self, texts):
    return self.tokenizer.tokenize(texts)


def test_saved_model_round_trip(google_vocab, minilm_ref, tmp_path):
  tokenizer = InGraphTokenizer(google_vocab, True)
  tf.saved_model.save(Preprocessor(tokenizer, 64), str(tmp_path / "preprocessor"))
  loaded = tf.saved_model.load(str(tmp_path / "preprocessor"))
  packed = loaded(tf.constant(minilm_ref["text_a"]), tf.constant(minilm_ref["text_b"]))
  np.testing.assert_array_equal(packed["input_ids"], minilm_ref["input_ids"])
  np.testing.assert_array_equal(packed["input_mask"], minilm_ref["attention_mask"])
  np.testing.assert_array_equal(packed["segment_ids"], minilm_ref["token_type_ids"])
  texts = ["co\u00adoperate 4½", "a" * 201 + " b", "İstanbul ΟΔΟΣ"]
  assert loaded.tokenize(tf.constant(texts)).to_list() == tokenizer.tokenize(texts).to_list()


def test_vocab_errors(tmp_path):
  with pytest.raises(VocabError, match="not found"):
    InGraphTokenizer(str(tmp_path / "missing.txt"))
  path = tmp_path / "vocab.txt"
  path.write_text("[PAD]\n[UNK]\n[SEP]\nthe\n", encoding="utf-8")
  with pytest.raises(ValueError, match=r"lacks the special token\(s\) \[CLS\]"):
    InGraphTokenizer(str(path))
