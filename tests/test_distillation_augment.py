"""TinyBERT's data augmentation (augment_data.py): the share of words replaced is p_t, the
masked LM never sees the word it replaces, rows depend on the seed alone (shards included),
GloVe neighbours for multi-piece words, the output is the task's training file, and errors."""

import csv
import os
import subprocess
import sys

import pytest

from classification import registry
from classification.processors import read_rows
from cli import FlagError, UserError
from distillation import augment
import fileio
import modeling
import tokenization
from tests.classifier_jobs import slice_glue
from tests.paths import REPO, SAMPLE
from tests.tiny_models import tiny_config_file

ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(REPO))
VOCAB = str(SAMPLE / "vocab.txt")
SENTIMENT = SAMPLE / "sentiment"


@pytest.fixture(name="checkpoint", scope="module")
def fixture_checkpoint(tmp_path_factory):
  """A random L=2, H=64 pre-training model over sample_data's vocabulary, saved with its heads
  as Google ships them (bert_model.ckpt and bert_config.json in one directory)."""
  directory = tmp_path_factory.mktemp("mlm")
  config_file = tiny_config_file(directory / "bert_config.json", 2231,
                                 max_position_embeddings=128)
  model = modeling.build_pretraining_model(modeling.BertConfig.from_json_file(config_file))
  modeling.save_google_checkpoint(model, str(directory / "bert_model.ckpt"))
  return str(directory)


@pytest.fixture(name="tokenizer", scope="module")
def fixture_tokenizer():
  return tokenization.FullTokenizer(VOCAB)


@pytest.fixture(name="mlm", scope="module")
def fixture_mlm(checkpoint, tokenizer):
  return augment.MaskedLM(modeling.load_config(checkpoint), checkpoint, tokenizer.vocab, top_k=5)


class SpyMLM:
  """A MaskedLM that records its inputs (what the model was shown) and its answers."""

  def __init__(self, mlm):
    self.mlm = mlm
    self.calls = []

  def rank(self, input_ids, input_mask, positions, originals):
    top = self.mlm.rank(input_ids, input_mask, positions, originals)
    self.calls.append((input_ids, input_mask, positions, originals, top))
    return top


def augmenter(tokenizer, mlm, **kwargs):
  values = dict(max_seq_length=64, p_t=0.4, n_aug=10, seed=1, glove=None, batch_size=32)
  values.update(kwargs)
  return augment.Augmenter(tokenizer, mlm, **values)


def sentiment_texts():
  return [fields[0] for _, fields in read_rows(str(SENTIMENT / "train.tsv"))][1:]


def augmented(aug, texts):
  """[(original words, [rewritten words, ...])] of one-column rows."""
  rows = list(aug.augment_rows([[t] for t in texts], range(len(texts)), (0,)))
  step = aug.n_aug + 1
  basic = aug.tokenizer.basic_tokenizer
  return [(basic.tokenize(rows[i][0]), [r[0].split(" ") for r in rows[i + 1:i + step]])
          for i in range(0, len(rows), step)]


def test_the_share_of_replaced_words_is_p_t_and_only_words_of_one_piece_change(tokenizer, mlm):
  spy = SpyMLM(mlm)
  results = augmented(augmenter(tokenizer, spy), sentiment_texts())
  ranked = {}  # (masked input ids, [MASK] position) -> the masked LM's candidates
  changed = eligible = 0
  for words, rewrites in results:
    single = [w.isalpha() and len(tokenizer.tokenize(w)) == 1 for w in words]
    for rewrite in rewrites:
      assert len(rewrite) == len(words)
      for word, new, one_piece in zip(words, rewrite, single):
        if not one_piece:
          assert new == word  # punctuation, numbers, and (without GloVe) multi-piece words
          continue
        eligible += 1
        if new != word:
          changed += 1
          assert new.isalpha()  # no special token, ## piece, punctuation or number
  # 4,000+ words x 10 rewrites: p_t within 1.5 points (the standard error is 0.2 points).
  assert eligible > 40000
  assert abs(changed / eligible - 0.4) < 0.015, changed / eligible
  # Each word's replacements are among its top_k (5) predictions.
  for input_ids, input_mask, positions, originals, top in spy.calls:
    for ids, n, at, original, best in zip(input_ids, input_mask.sum(1), positions, originals,
                                          top):
      ranked[tuple(ids[:n].tolist()), int(at)] = set(tokenizer.convert_ids_to_tokens(best.tolist()))
      assert original not in best
  for words, rewrites in results[:50]:
    ids = [tokenizer.vocab["[CLS]"]] + tokenizer.convert_tokens_to_ids(
        tokenizer.tokenize(" ".join(words))) + [tokenizer.vocab["[SEP]"]]
    at = 0
    for j, word in enumerate(words):
      pieces = tokenizer.tokenize(word)
      at += len(pieces)
      if word.isalpha() and len(pieces) == 1:
        masked = list(ids)
        masked[at] = tokenizer.vocab["[MASK]"]
        used = {rewrite[j] for rewrite in rewrites} - {word}
        assert used <= ranked[tuple(masked), at], (word, used)


def test_the_masked_lm_never_sees_the_word_it_replaces(tokenizer, mlm):
  spy = SpyMLM(mlm)
  texts = ["the ending is perfect and the soup was hot .",
           "my alarm clock was charming ; it works perfectly !",
           " ".join(["we", "walked", "to", "the", "river", "every", "day"] * 6)]
  aug = augmenter(tokenizer, spy, max_seq_length=16, batch_size=8)
  list(aug.augment_rows([[t] for t in texts], range(3), (0,)))
  cls, sep, mask = tokenizer.convert_tokens_to_ids(["[CLS]", "[SEP]", "[MASK]"])
  full = [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(t)) for t in texts]
  inputs = 0
  for input_ids, input_mask, positions, originals, _ in spy.calls:
    assert len(input_ids) <= 8
    for ids, n, at, original in zip(input_ids, input_mask.sum(1), positions, originals):
      ids = ids[:n].tolist()
      inputs += 1
      # One [MASK], at the position asked about, in one segment: [CLS] pieces [SEP].
      assert ids[at] == mask and ids.count(mask) == 1
      assert ids[0] == cls and ids[-1] == sep and sep not in ids[1:-1] and n <= 16
      # The pieces are one window of one text (no copy of the text follows), so the word is
      # visible only where the text itself repeats it.
      window = ids[1:-1]
      window[at - 1] = original
      assert any(pieces[s:s + len(window)] == window for pieces in full
                 for s in range(len(pieces))), ids
      assert original not in ids or window.count(original) > 1
  # One masked input per word of one piece (not per rewrite), a batch at a time.
  words = [w for t in texts for w in tokenizer.basic_tokenizer.tokenize(t)
           if w.isalpha() and len(tokenizer.tokenize(w)) == 1]
  assert inputs == aug.mlm_inputs == len(words) == 9 + 8 + 42
  assert len(spy.calls) == -(-inputs // 8)


def test_the_rows_depend_on_the_seed_alone(tokenizer, mlm):
  texts = sentiment_texts()[:40]
  rows = [[t, "1"] for t in texts]

  def run(seed, indices=range(40), batch_size=32):
    aug = augmenter(tokenizer, mlm, seed=seed, batch_size=batch_size, n_aug=3)
    return list(aug.augment_rows([rows[i] for i in indices], indices, (0,)))

  first = run(seed=1)
  assert len(first) == 40 * 4
  assert run(seed=1, batch_size=5) == first
  assert run(seed=2) != first
  # A shard's rows are those of the whole run: draws depend on (seed, row index).
  odd = run(seed=1, indices=range(1, 40, 2))
  assert odd == [row for i in range(1, 40, 2) for row in first[4 * i:4 * i + 4]]


def write_glove(path, vectors):
  with open(path, "w", encoding="utf-8") as f:
    for word, vector in vectors.items():
      f.write(" ".join([word] + [f"{v:.3f}" for v in vector]) + "\n")
  return str(path)


def test_words_of_several_pieces_take_glove_neighbours_when_given(tokenizer, mlm, tmp_path):
  assert len(tokenizer.tokenize("restaurant")) > 1 and len(tokenizer.tokenize("delicious")) > 1
  glove = write_glove(tmp_path / "glove.txt", {
      "restaurant": [1.0, 0.0, 0.0], "bistro": [0.9, 0.1, 0.0], "diner": [0.8, 0.3, 0.1],
      "canteen": [0.5, 0.5, 0.5], "banana": [-1.0, 0.2, 0.0], "the": [0.0, 0.0, 1.0]})
  neighbours = augment.GloveNeighbours(*augment.read_glove(glove), top_k=2)
  assert neighbours("restaurant") == ("bistro", "diner") and neighbours("delicious") == ()
  text = "the delicious restaurant , 2 stars"
  for glove_neighbours, expected in ((None, {"restaurant"}), (neighbours, {"bistro", "diner"})):
    aug = augmenter(tokenizer, mlm, p_t=1.0, n_aug=30, glove=glove_neighbours)
    (words, rewrites), = augmented(aug, [text])
    assert words[2] == "restaurant" and {r[2] for r in rewrites} == expected
    assert {r[1] for r in rewrites} == {"delicious"}  # not in the GloVe file: kept
    assert {(r[3], r[4]) for r in rewrites} == {(",", "2")}  # not words: kept
    assert all(r[0] != "the" and r[5] != "stars" for r in rewrites)  # p_t = 1: replaced
  # Only the first glove_max_words are read; a short line is a user error.
  assert augment.read_glove(glove, max_words=2)[0] == ["restaurant", "bistro"]
  with open(glove, "a", encoding="utf-8") as f:
    f.write("broken 0.1 0.2\n")
  with pytest.raises(UserError, match=r"glove.txt, line 7: expected a word and 3 numbers"):
    augment.read_glove(glove)


def write_tsv(path, rows, bom=False):
  with open(path, "w", encoding="utf-8") as f:
    f.write(("\ufeff" if bom else "") + "".join("\t".join(r) + "\n" for r in rows))


MRPC_ROWS = [["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"],
             ["1", "702876", "702977", "Amrozi accused his brother of lying .",
              "Referring to him, Amrozi accused his brother ."],
             ["0", "2108705", "2108831", "The clock was sold in 1998 .",
              "They bought the clock in 1995 for $ 2 ."]]
COLA_ROWS = [["gj04", "1", "", "Our friends won't buy this analysis."],
             ["gj04", "0", "*", "One more pseudo generalization or I'm giving up."]]


def write_csv(path, rows):
  with open(path, "w", encoding="utf-8", newline="") as f:
    csv.writer(f, lineterminator="\n").writerows(rows)


@pytest.mark.parametrize("task, rows, task_options, name", [
    ("mrpc", MRPC_ROWS, {}, "train.tsv"),
    ("cola", COLA_ROWS, {}, "train.tsv"),
    ("generic", [["id", "review", "stars"], ["a", 'great soup, "hot" bread', "5"],
                 ["b", "the bread was cold", "1"]],
     dict(text_a_column="review", label_column="stars"), "train.csv")])
def test_the_output_is_the_task_training_file_and_aug_train_reads_it(
    checkpoint, tmp_path, task, rows, task_options, name):
  data = tmp_path / "data"
  data.mkdir()
  if name.endswith(".csv"):
    write_csv(data / name, rows)
  else:
    write_tsv(data / name, rows, bom=task == "mrpc")
  summary = augment.run(augment.AugmentOptions(
      task_name=task, data_dir=str(data), init_checkpoint=checkpoint, vocab_file=VOCAB,
      n_aug=3, p_t=0.5, seed=3, task_options=task_options))
  assert summary["output_file"] == str(data / name.replace("train", "train_aug"))
  original = registry.get_processor(task, **task_options).get_train_table(str(data))
  assert summary["rows_written"] == 4 * len(original.rows)
  trained_on = registry.get_processor(task, aug_train=True, **task_options)
  assert len(trained_on.get_train_examples(str(data))) == 4 * len(original.rows)
  table = trained_on.get_train_table(str(data))
  assert (table.header, table.delimiter) == (original.header, original.delimiter)
  basic = tokenization.BasicTokenizer()
  changed = set()
  for i, fields in enumerate(original.rows):
    block = table.rows[4 * i:4 * i + 4]
    assert block[0] == fields
    for rewrite in block[1:]:
      for c, (old, new) in enumerate(zip(fields, rewrite)):
        if c in original.text_columns:
          assert len(new.split(" ")) == len(basic.tokenize(old))
          if new.split(" ") != basic.tokenize(old):
            changed.add(c)
        else:
          assert new == old
  assert changed == set(original.text_columns)


def _options(checkpoint, tmp_path, **kwargs):
  values = dict(task_name="sst-2", data_dir=str(SENTIMENT), init_checkpoint=checkpoint,
                vocab_file=VOCAB, output_file=str(tmp_path / "out.tsv"))
  values.update(kwargs)
  return augment.AugmentOptions(**values)


@pytest.mark.parametrize("flags, message", [
    (dict(p_t=1.5), "--p_t must be a probability"),
    (dict(num_shards=2, shard_index=2), "--shard_index must be in"),
    (dict(n_aug=0), "--n_aug must be positive"),
    (dict(max_seq_length=2), "--max_seq_length must be at least 3"),
])
def test_option_errors(checkpoint, tmp_path, flags, message):
  with pytest.raises(FlagError, match=message):
    _options(checkpoint, tmp_path, **flags)


def test_user_errors(checkpoint, tmp_path, minilm_dir):
  def options(**kwargs):
    return _options(checkpoint, tmp_path, **kwargs)

  with pytest.raises(FlagError, match="XnliProcessor cannot give its training file"):
    augment.run(options(task_name="xnli"))
  with pytest.raises(UserError, match=r"is also an input \(the training file of --data_dir\)"):
    augment.run(options(output_file=str(SENTIMENT / "train.tsv"), overwrite=True))
  with pytest.raises(UserError, match="output directory does not exist"):
    augment.run(options(output_file=str(tmp_path / "no" / "out.tsv")))
  # MiniLM (sentence-transformers) has no masked-LM head.
  with pytest.raises(modeling.CheckpointError, match="has no masked-LM head"):
    augment.MaskedLM(modeling.load_config(minilm_dir), minilm_dir,
                     tokenization.load_vocab(os.path.join(minilm_dir, "vocab.txt")), top_k=15)
  assert not os.listdir(tmp_path)


@pytest.mark.slow
def test_shards_write_the_rows_of_one_run(checkpoint, tmp_path):
  data = tmp_path / "data"
  data.mkdir()
  write_tsv(data / "train.tsv", [["sentence", "label"]] + [
      [t, "1"] for t in sentiment_texts()[:30]])
  common = dict(task_name="sst-2", data_dir=str(data), init_checkpoint=checkpoint,
                vocab_file=VOCAB, n_aug=2, seed=7)
  whole = augment.run(augment.AugmentOptions(**common))["output_file"]
  shards = [augment.run(augment.AugmentOptions(num_shards=2, shard_index=i, **common))
            ["output_file"] for i in range(2)]
  assert shards == [f"{whole}-0000{i}-of-00002" for i in range(2)]
  rows = [fields for _, fields in read_rows(whole)]
  parts = [[fields for _, fields in read_rows(s)] for s in shards]
  assert all(p[0] == rows[0] == ["sentence", "label"] for p in parts)
  assert sorted(parts[0][1:] + parts[1][1:]) == sorted(rows[1:]) and len(rows) == 1 + 30 * 3
  assert parts[0][1:4] == rows[1:4] and parts[1][1:4] == rows[4:7]


@pytest.mark.multiprocess
def test_cli_refuses_an_existing_output(checkpoint, tmp_path):
  out = tmp_path / "train_aug.tsv"
  out.write_text("mine\n")
  run = subprocess.run(
      [sys.executable, str(REPO / "augment_data.py"), "--task_name=sst-2",
       f"--data_dir={SENTIMENT}", f"--init_checkpoint={checkpoint}", f"--vocab_file={VOCAB}",
       f"--output_file={out}"], capture_output=True, text=True, env=ENV, check=False)
  assert run.returncode == 1
  assert run.stderr.strip().splitlines()[-1] == (
      f"augment_data: error: output file exists: '{out}' (pass --overwrite to replace it)")
  assert "Traceback" not in run.stderr and out.read_text() == "mine\n"


@pytest.mark.slow
@pytest.mark.multiprocess
def test_cli_augments_glue_sst2_with_google_tiny_and_run_classifier_trains_on_it(
    shared_dir, tmp_path):
  tiny = shared_dir / "fixtures" / "google_bert_tiny"
  data = slice_glue(shared_dir, "SST-2", str(tmp_path / "SST-2"), 20)
  run = subprocess.run(
      [sys.executable, str(REPO / "augment_data.py"), "--task_name=SST-2", f"--data_dir={data}",
       f"--init_checkpoint={tiny / 'bert_model.ckpt'}", f"--vocab_file={tiny / 'vocab.txt'}",
       "--n_aug=4", "--batch_size=16"], capture_output=True, text=True, env=ENV, check=False)
  assert run.returncode == 0, run.stderr[-3000:]
  assert "80 of them new" in run.stderr, run.stderr[-3000:]
  with open(os.path.join(data, "train_aug.tsv"), encoding="utf-8") as f:
    lines = f.read().splitlines()
  assert len(lines) == 1 + 20 * 5 and lines[0] == "sentence\tlabel"
  out = tmp_path / "out"
  train = subprocess.run(
      [sys.executable, str(REPO / "run_classifier.py"), "--task_name=SST-2", f"--data_dir={data}",
       f"--vocab_file={tiny / 'vocab.txt'}", f"--init_checkpoint={tiny / 'bert_model.ckpt'}",
       f"--output_dir={out}", "--do_train", "--aug_train", "--max_seq_length=32",
       "--train_batch_size=10", "--num_train_epochs=1"],
      capture_output=True, text=True, env=ENV, check=False)
  assert train.returncode == 0, train.stderr[-3000:]
  assert fileio.count_records(str(out / "train.tf_record")) == 100
