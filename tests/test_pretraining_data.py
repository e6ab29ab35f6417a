"""create_pretraining_data: Google's record format, instance/masking statistics, determinism.

Outputs are parsed with Google's exact feature spec (`pretraining_data.features`)
through TensorFlow, the way run_pretraining reads them.
"""

import random

import numpy as np
import pytest

import tokenization
from pretraining_data import features, instances, masking, pipeline, writer
from tests import char_port
from tests.pretraining_jobs import assert_googles_masking, assert_whole_words_masked

SEQ, PRED = 128, 20


def _config(tmp_path, inputs, vocab, **kw):
  kw.setdefault("dupe_factor", 1)
  kw.setdefault("num_workers", 1)
  return pipeline.PretrainingDataOptions(input_file=inputs, output_file=str(tmp_path / "out.tfrecord"),
                         vocab_file=vocab, **kw)


def _parse(paths, seq=SEQ, pred=PRED):
  """All records of `paths` parsed with Google's feature spec -> {name: np.ndarray}."""
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  spec = features.feature_spec(seq, pred)
  ds = tf.data.TFRecordDataset(paths).map(lambda r: tf.io.parse_single_example(r, spec))
  batch = next(iter(ds.batch(1 << 20)))
  return {k: v.numpy() for k, v in batch.items()}


@pytest.fixture(scope="module")
def corpus(shared_dir):
  return ",".join(str(shared_dir / "data" / "corpus" / f)
                  for f in ("gutenberg_heldout.txt", "wikitext2_valid.txt"))


@pytest.fixture(scope="module")
def run_default(tmp_path_factory, corpus, google_vocab):
  """One run with Google's defaults (dupe_factor 2) over ~2 MB; reused by the statistics tests."""
  tmp = tmp_path_factory.mktemp("default")
  summary = pipeline.run(_config(tmp, corpus, google_vocab, dupe_factor=2, num_workers=2),
                         progress_stream=open(tmp / "progress.txt", "w"))
  return summary, _parse([summary.output_files[0]]), tmp


@pytest.fixture(scope="module")
def tokenizer(google_vocab):
  return tokenization.FullTokenizer(google_vocab)


@pytest.mark.multiprocess
def test_schema_is_googles_feature_spec(run_default):
  summary, rec, _ = run_default
  lengths = features.feature_lengths(SEQ, PRED)
  assert set(rec) == set(lengths) == {
      "input_ids", "input_mask", "segment_ids", "masked_lm_positions", "masked_lm_ids",
      "masked_lm_weights", "next_sentence_labels"}
  for name, kind, _ in features.FEATURES:
    assert rec[name].shape == (summary.instances, lengths[name])
    assert rec[name].dtype == (np.float32 if kind == "float" else np.int64)
  assert summary.instances > 4000


def test_records_equal_protos_built_like_google(tokenizer):
  """Our hand-encoded bytes parse to the Example Google's create_int/float_feature would build."""
  # pylint: disable-next=import-outside-toplevel
  from tensorflow.core.example import example_pb2, feature_pb2
  ids = np.array([[101, 2023, 2003, 102, 30000, 102] + [0] * 4], np.int32)
  masked = masking.MaskedInputs(
      ids, np.array([[1, 4, 0]], np.int32), np.array([[2023, 16384, 0]], np.int32),
      np.array([2]), 1, 0, 1)
  (record,) = writer.ExampleEncoder(10, 3).encode_batch(ids, np.array([6]), np.array([2]),
                                                        np.array([1]), masked)
  data = record[12:-4]
  assert len(record) == len(data) + 16
  int_feature = lambda v: feature_pb2.Feature(int64_list=feature_pb2.Int64List(value=v))
  expected = example_pb2.Example(features=feature_pb2.Features(feature={
      "input_ids": int_feature(ids[0].tolist()),
      "input_mask": int_feature([1] * 6 + [0] * 4),
      "segment_ids": int_feature([0] * 4 + [1] * 2 + [0] * 4),
      "masked_lm_positions": int_feature([1, 4, 0]),
      "masked_lm_ids": int_feature([2023, 16384, 0]),
      "masked_lm_weights": feature_pb2.Feature(
          float_list=feature_pb2.FloatList(value=[1.0, 1.0, 0.0])),
      "next_sentence_labels": int_feature([1]),
  }))
  assert example_pb2.Example.FromString(data) == expected


def test_records_index_select_and_pickle_like_a_list():
  """`writer.Records` (batches of records end to end) gives the records of a plain list, by
  index and in any order, also after a round trip through pickle (a worker's hand-off)."""
  import pickle  # pylint: disable=import-outside-toplevel
  rng = np.random.default_rng(0)
  plain = [bytes(rng.integers(0, 256, int(n), np.uint8)) for n in rng.integers(0, 40, 30)]
  records = writer.Records()
  for lo, hi in ((0, 7), (7, 7), (7, 20), (20, 30)):  # an empty batch too
    records.extend(writer.Records.from_list(plain[lo:hi]))
  records = pickle.loads(pickle.dumps(records))
  assert len(records) == 30 and list(records) == plain and records[-1] == plain[-1]
  order = rng.permutation(30)
  assert [bytes(r) for r in records.select(order)] == [plain[i] for i in order]
  assert writer.Records().select([]) == []
  with pytest.raises(IndexError):
    records[30]  # pylint: disable=pointless-statement


def test_varint_rows_matches_protobuf():
  values = np.array([[0, 1, 127, 128, 300, 16383, 16384, 2 ** 21, 2 ** 35]], np.int64)
  data, offsets = writer.varint_rows(values)
  from google.protobuf.internal import encoder  # pylint: disable=import-outside-toplevel
  # pylint: disable-next=protected-access
  expected = b"".join(encoder._VarintBytes(int(v)) for v in values[0])
  assert data == expected and offsets == [0, len(expected)]


@pytest.mark.multiprocess
def test_input_layout(run_default):
  _, rec, _ = run_default
  ids, mask, seg = rec["input_ids"], rec["input_mask"], rec["segment_ids"]
  n = mask.sum(1)
  rows = np.arange(len(n))
  assert (ids[:, 0] == 101).all()  # [CLS]
  assert (ids[rows, n - 1] == 102).all()  # final [SEP]
  a_len = (seg == 0).sum(1) - (SEQ - n) - 2
  assert (a_len >= 1).all() and (ids[rows, a_len + 1] == 102).all()
  assert ((n - a_len - 3) >= 1).all()  # B non-empty
  pos = np.arange(SEQ)[None, :]
  assert (mask == (pos < n[:, None])).all()
  assert (seg == ((pos >= a_len[:, None] + 2) & (pos < n[:, None]))).all()
  assert (ids[pos >= n[:, None]] == 0).all()
  assert n.max() <= SEQ


@pytest.mark.multiprocess
def test_masking_statistics(run_default):
  summary, rec, _ = run_default
  assert_googles_masking(rec, PRED)
  s = summary.stats
  assert s["masked"] + s["random_token"] + s["kept"] == s["predictions"] == (
      rec["masked_lm_weights"] > 0).sum()


@pytest.mark.multiprocess
def test_random_next_and_short_share(run_default):
  summary, rec, _ = run_default
  share = rec["next_sentence_labels"].mean()
  # Google's logic forces a random B when A would take the only segment, so its own
  # script gives ~0.55 on book text; this corpus mix measures 0.52-0.56.
  assert 0.5 < share < 0.6
  assert summary.stats["random_next"] == rec["next_sentence_labels"].sum()
  s = summary.stats
  # The short target is drawn once per (document, dupe), as in Google's script: 668 draws.
  assert s["documents"] == 2 * 234
  assert abs(s["short_target_documents"] / s["documents"] - 0.1) < 0.04


@pytest.mark.multiprocess
def test_summary_and_progress(run_default):
  summary, _, tmp = run_default
  text = "\n".join(summary.lines())
  assert f"Wrote {summary.instances:,} instances" in text
  assert "random-next pairs" in text and "[MASK]" in text and "kept" in text
  progress = (tmp / "progress.txt").read_text()
  assert "documents read" in progress and "MB/s" in progress


def _google_truncation(la, lb, max_num):
  """Google's truncate_seq_pair loop, counting removals."""
  cut_a = cut_b = 0
  while la + lb > max_num:
    if la > lb:
      la, cut_a = la - 1, cut_a + 1
    else:
      lb, cut_b = lb - 1, cut_b + 1
  return cut_a, cut_b


def test_truncation_counts_match_googles_loop():
  for la in range(1, 60):
    for lb in range(1, 60):
      for max_num in (2, 5, 30, 125):
        # pylint: disable-next=protected-access
        assert instances._truncation(la, lb, max_num) == _google_truncation(la, lb, max_num)


def _google_spans(docs, doc_indices, max_seq_length, short_seq_prob, rng):
  """Google's create_instances_from_document on token lists (oracle), truncation by counts.

  Tokens are (document, sentence, index) triples so the result shows which
  sentences and which part of them each segment holds.
  """
  max_num = max_seq_length - 3
  out = []
  for d in doc_indices:
    document = docs[d]
    target = max_num
    if rng.random() < short_seq_prob:
      target = rng.randint(2, max_num)
    chunk, length, i = [], 0, 0
    while i < len(document):
      chunk.append(document[i])
      length += len(document[i])
      if i == len(document) - 1 or length >= target:
        a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
        a = [t for s in chunk[:a_end] for t in s]
        b = []
        if len(chunk) == 1 or rng.random() < 0.5:
          is_random = True
          for _ in range(10):
            r = rng.randint(0, len(docs) - 1)
            if r != d:
              break
          start = rng.randint(0, len(docs[r]) - 1)
          for j in range(start, len(docs[r])):
            b.extend(docs[r][j])
            if len(b) >= target - len(a):
              break
          i -= len(chunk) - a_end
        else:
          is_random = False
          b = [t for s in chunk[a_end:] for t in s]
        cut_a, cut_b = _google_truncation(len(a), len(b), max_num)
        front_a = rng.getrandbits(cut_a).bit_count() if cut_a else 0
        front_b = rng.getrandbits(cut_b).bit_count() if cut_b else 0
        a = a[front_a:len(a) - (cut_a - front_a)]
        b = b[front_b:len(b) - (cut_b - front_b)]
        out.append((a, b, is_random))
        chunk, length = [], 0
      i += 1
  return out


@pytest.mark.parametrize("max_seq_length,short_seq_prob", [(128, 0.1), (32, 0.5), (8, 0.0)])
def test_instance_spans_follow_googles_document_logic(max_seq_length, short_seq_prob):
  gen = random.Random(7)
  docs = [[[(d, s, k) for k in range(gen.randint(1, 40))] for s in range(gen.randint(1, 12))]
          for d in range(25)]
  flat = [t for doc in docs for s in doc for t in s]
  sent_lens = [len(s) for doc in docs for s in doc]
  chunk = instances.TokenizedChunk.from_pieces(
      [(np.arange(len(flat), dtype=np.int32), np.array(sent_lens),
        np.array([len(d) for d in docs]))])
  order = list(range(25))
  gen.shuffle(order)
  spans = instances.create_instance_spans(chunk, order, max_seq_length, short_seq_prob,
                                          random.Random(3))
  expected = _google_spans(docs, order, max_seq_length, short_seq_prob, random.Random(3))
  got = [([flat[i] for i in range(a0, a0 + la)], [flat[i] for i in range(b0, b0 + lb)], bool(r))
         for a0, la, b0, lb, r in zip(spans.a_start, spans.a_len, spans.b_start, spans.b_len,
                                      spans.is_random_next)]
  assert got == expected
  assert len(got) > 50


def _inputs_from_tokens(rows, tokenizer):
  """[CLS] a [SEP] b [SEP] rows of word pieces -> masking.ModelInputs."""
  n = len(rows)
  ids = np.zeros((n, SEQ), np.int32)
  lengths, a_lengths = np.zeros(n, np.int64), np.zeros(n, np.int64)
  for i, (a, b) in enumerate(rows):
    toks = ["[CLS]", *a, "[SEP]", *b, "[SEP]"]
    ids[i, :len(toks)] = tokenizer.convert_tokens_to_ids(toks)
    lengths[i], a_lengths[i] = len(toks), len(a)
  return masking.ModelInputs(ids, lengths, a_lengths)


def test_whole_word_masking_masks_whole_words(tokenizer, shared_dir):
  lines = (shared_dir / "data" / "corpus" / "wikitext2_valid.txt").read_text().splitlines()
  pieces = [tokenizer.tokenize(line) for line in lines[:4000] if line]
  rows = [(p[:60], q[:60]) for p, q in zip(pieces[::2], pieces[1::2]) if p and q]
  inputs = _inputs_from_tokens(rows, tokenizer)
  vocab = list(tokenizer.vocab)
  cont = np.array([t.startswith("##") for t in vocab])
  out = masking.mask_inputs(inputs, 0.15, PRED, len(vocab), 103, cont,
                            np.random.default_rng(0))
  k = np.minimum(PRED, np.maximum(1, np.rint(inputs.lengths * 0.15)))
  assert (out.num_predictions <= k).all() and (out.num_predictions >= 1).all()
  checked = 0
  for i in range(len(rows)):
    chosen = set(out.positions[i, :out.num_predictions[i]].tolist())
    toks = tokenizer.convert_ids_to_tokens(inputs.input_ids[i, :inputs.lengths[i]].tolist())
    checked += assert_whole_words_masked(toks, chosen)
  assert checked > 200  # many multi-piece words were masked
  assert (out.label_ids[out.positions > 0] > 0).all()


def test_single_piece_masking_split_and_positions(tokenizer):
  rows = [(["the"] * 50, ["cat"] * 70)] * 2000
  inputs = _inputs_from_tokens(rows, tokenizer)
  out = masking.mask_inputs(inputs, 0.15, PRED, 30522, 103, None, np.random.default_rng(1))
  assert (out.num_predictions == 18).all()  # n = 123 tokens: round(18.45) = 18
  assert out.num_masked / 36000 == pytest.approx(0.8, abs=0.01)
  assert out.num_random / 36000 == pytest.approx(0.1, abs=0.01)
  pos = out.positions[:, :18]
  assert not np.isin(pos, [0, 51, 122]).any() and (out.positions[:, 18:] == 0).all()
  # Every candidate position is equally likely: first vs second half of A/B.
  counts = np.bincount(pos.ravel(), minlength=SEQ)
  assert counts[1:51].std() / counts[1:51].mean() < 0.1


def test_single_piece_choice_equals_sorted_choice():
  """The threshold choice of single pieces picks what the argsort of all keys picks, and
  leaves a tie at a threshold to it."""
  rng = np.random.default_rng(3)
  n = 500
  lengths = rng.integers(5, SEQ + 1, n)
  a_lengths = rng.integers(1, lengths - 3)
  inputs = masking.ModelInputs(np.zeros((n, SEQ), np.int32), lengths, a_lengths)
  k = np.minimum(PRED, np.maximum(1, np.rint(lengths * rng.choice([0.15, 0.5, 1.0], n)))).astype(
      np.int64)
  keys = rng.random((n, SEQ))
  fast = masking._chosen_pieces(inputs, k, keys.copy())  # pylint: disable=protected-access
  assert fast is not None
  np.testing.assert_array_equal(  # pylint: disable=protected-access
      fast, masking._chosen_groups(inputs, k, None, keys.copy()))
  assert (fast.sum(axis=1) == np.minimum(k, lengths - 3)).all()
  tied = np.round(keys, 1)  # many equal keys: the sorted choice decides
  assert masking._chosen_pieces(inputs, k, tied.copy()) is None  # pylint: disable=protected-access


def test_tokenized_ids_equal_full_tokenizer(tokenizer, shared_dir):
  """The memoised word lookup gives exactly FullTokenizer's ids, line by line."""
  text = (shared_dir / "data" / "corpus" / "wikitext2_valid.txt").read_text()
  docs = [d.splitlines() for d in text.split("\n\n")[:20]]
  docs.append(["\x00\x01", "\u200b"])  # tokenizes to nothing: an empty document
  ids, sent_lens, doc_counts, n_empty = instances.tokenize_documents(
      tokenizer, instances.WordIds(tokenizer), docs)
  expected = [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(line))
              for doc in docs for line in doc]
  sentences = [a.tolist() for a in np.split(ids, np.cumsum(sent_lens)[:-1])]
  assert sentences == [e for e in expected if e]
  assert len(sentences) > 500
  assert doc_counts.tolist() == [sum(1 for e in doc if e) for doc in
                                 [expected[sum(map(len, docs[:i])):][:len(d)]
                                  for i, d in enumerate(docs[:-1])]]
  assert n_empty == 1


def _ids_per_line(word_ids, lines):
  ids, lengths = word_ids.ids_of_lines(lines)
  assert ids.dtype == np.int32 and len(lengths) == len(lines) and lengths.sum() == len(ids)
  return [a.tolist() for a in np.split(ids, np.cumsum(lengths)[:-1])] if len(lines) else []


# Lines the batched tokenizer cannot take apart with its ASCII cleaning and presplit alone.
HARD_LINES = [
    "Héllo, NAÏVE café—“quoted” ‘single’ «guillemets» ¿qué? ¡sí!",  # accents, Unicode punct.
    "中文字,ab中cd \U00020000x \uf900x こんにちは 안녕 hi😀there",  # CJK, kana, hangul, emoji
    "a\x00b\x01c\x07d\x0be\x0cf\x1fg\x7fh \ufffdi\u200bj\ufeffk\u0085l",  # NUL, Cc, Cf dropped
    "a\tb\rc\u00a0d\u3000e\u2028f\u2029g\u2003h  ",  # whitespace, ASCII and Unicode
    "line\nwith a newline",  # LF inside a line: whitespace, as Google reads it
    "$5^2`x~y|z @#%&*+/<=>[\\]_{} don't well-known (a) [b] \"c\"",  # every ASCII symbol
    "ΑΣ.Β ΟΔΟΣ, ΣΑ'Σ (ΟΣ) ΑΣ-Β ΑΣ;Β",  # capital sigma: lower case decided across punctuation
    "a\u1fefb \u037e \u0387x e\u0301 \u0301a (\u0301) \u0130stanbul \u212a",  # NFD surprises
    "[CLS] [MASK] [UNK] ##ing qzxqzxq zzzzzzzzzzzzzzzz",  # special tokens are plain text
    "x" * 200 + " " + "y" * 201 + " " + "é" * 201 + " " + "ab" * 150 + ",",  # the 200 limit
    "", " ", "\x00", ",", "\u200b", "a",
]


@pytest.mark.parametrize("lower", [True, False])
def test_batched_ids_equal_googles_rules_on_hard_lines(google_vocab, lower):
  """WordIds.ids_of_lines gives the ids of Google's rules (the char-by-char port) for every
  line, also for those only its exact per-piece path handles, however lines are batched."""
  vocab = tokenization.load_vocab(google_vocab)
  tok = tokenization.FullTokenizer(google_vocab, do_lower_case=lower)
  expected = [tok.convert_tokens_to_ids(char_port.full_tokenize(line, vocab, lower))
              for line in HARD_LINES]
  word_ids = instances.WordIds(tok)
  assert _ids_per_line(word_ids, HARD_LINES) == expected
  assert _ids_per_line(word_ids, HARD_LINES[::-1]) == expected[::-1]  # from the memo
  for i, line in enumerate(HARD_LINES):  # one line at a time, each with a fresh memo
    assert _ids_per_line(instances.WordIds(tok), [line]) == [expected[i]], repr(line)
  assert _ids_per_line(word_ids, []) == []
  rng = random.Random(38)
  pool = list(",.;:!?\"'()- abcXYZ09") * 8 + [ch for line in HARD_LINES for ch in line]
  lines = ["".join(rng.choice(pool) for _ in range(rng.randint(0, 30))) for _ in range(3000)]
  assert _ids_per_line(word_ids, lines) == [
      tok.convert_tokens_to_ids(char_port.full_tokenize(line, vocab, lower)) for line in lines]


@pytest.mark.parametrize("lower", [True, False])
def test_batched_ids_equal_full_tokenizer_on_corpora(google_vocab, shared_dir, lower):
  tok = tokenization.FullTokenizer(google_vocab, do_lower_case=lower)
  word_ids = instances.WordIds(tok)
  corpus = shared_dir / "data" / "corpus"
  for path in (corpus / "gutenberg_heldout.txt", corpus / "wikitext-2-raw" / "wiki.valid.raw"):
    lines = path.read_text(encoding="utf-8").splitlines()
    for start in range(0, len(lines), 4096):
      batch = lines[start:start + 4096]
      assert _ids_per_line(word_ids, batch) == [
          tok.convert_tokens_to_ids(tok.tokenize(line)) for line in batch]
