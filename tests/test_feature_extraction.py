"""extract_features: Google's input/output format, values against HF's MiniLM outputs."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from feature_extraction import extract
import fileio
import modeling
from tests.paths import REPO
import tokenization


def test_minilm_features_match_huggingface(tmp_path, minilm_dir, shared_dir):
  ref = np.load(shared_dir / "fixtures" / "minilm_reference.npz")
  rows = [0, 2, 7]
  lines = [ref["text_a"][i] + (" ||| " + ref["text_b"][i] if ref["is_pair"][i] else "")
           for i in rows]
  (tmp_path / "in.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
  tokenizer = tokenization.FullTokenizer(os.path.join(minilm_dir, "vocab.txt"), True)
  count = extract.extract_features(
      modeling.load_config(minilm_dir), minilm_dir, tokenizer, str(tmp_path / "in.txt"),
      str(tmp_path / "out.jsonl"), "-1,-6", max_seq_length=64, batch_size=2)
  assert count == 3 and sorted(os.listdir(tmp_path)) == ["in.txt", "out.jsonl"]
  records = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
  for linex, (row, record) in enumerate(zip(rows, records)):
    assert list(record) == ["linex_index", "features"] and record["linex_index"] == linex
    tokens = [f["token"] for f in record["features"]]
    assert tokens == ["[CLS]"] + ref["tokens"][row].split()[1:]
    values = np.array([f["layers"][0]["values"] for f in record["features"]])
    assert [layer["index"] for layer in record["features"][0]["layers"]] == [-1, -6]
    assert np.abs(values - ref["last_hidden_state"][row, :len(tokens)]).max() < 1e-5
    assert all(v == round(v, 6) for v in record["features"][3]["layers"][1]["values"])


def test_examples_and_truncation(tmp_path, google_vocab):
  (tmp_path / "in.txt").write_text("Hello world ||| Goodbye\nsingle a ||| b ||| c\n\n")
  examples = extract.read_examples(tmp_path / "in.txt")
  assert [(e.unique_id, e.text_a, e.text_b) for e in examples] == [
      (0, "Hello world", "Goodbye"), (1, "single a ||| b", "c"), (2, "", None)]
  tokenizer = tokenization.FullTokenizer(google_vocab, True)
  features = extract.convert_examples_to_features(
      [extract.InputExample(0, "a b c d e f", "g h"), extract.InputExample(1, "a b c d e f g")],
      7, tokenizer)
  assert features[0].tokens == ["[CLS]", "a", "b", "[SEP]", "g", "h", "[SEP]"]
  assert features[0].segment_ids == [0, 0, 0, 0, 1, 1, 1]
  assert features[1].tokens == ["[CLS]", "a", "b", "c", "d", "e", "[SEP]"]
  with pytest.raises(ValueError, match=r"layers \[-3\] out of range for a model with 2 layers"):
    extract.parse_layers("-1,-3", 2)


@pytest.mark.parametrize("name, message", [
    ("empty.txt", "is empty: no line to extract features for"),
    ("missing.txt", ": not found"), (".", ": a directory, not a file"),
    ("latin1.txt", r"latin1\.txt:2: not valid UTF-8")])
def test_unusable_input_is_refused(tmp_path, name, message):
  (tmp_path / "empty.txt").write_text("")
  (tmp_path / "latin1.txt").write_bytes(b"Fine.\nCaf\xe9 tr\xe8s bien.\n")
  with pytest.raises(fileio.InputError, match=message):
    extract.read_examples(str(tmp_path / name))


@pytest.mark.multiprocess
def test_cli_with_google_checkpoint(tmp_path, shared_dir):
  tiny = shared_dir / "fixtures" / "google_bert_tiny"
  (tmp_path / "in.txt").write_text("The man went to the store. ||| He bought milk.\n")
  out = tmp_path / "out.jsonl"
  subprocess.run(
      [sys.executable, "extract_features.py", f"--input_file={tmp_path / 'in.txt'}",
       f"--output_file={out}", f"--init_checkpoint={tiny / 'bert_model.ckpt'}",
       f"--bert_config_file={tiny / 'bert_config.json'}", f"--vocab_file={tiny / 'vocab.txt'}",
       "--max_seq_length=16", "--layers=-1,-2"],
      cwd=REPO, check=True, capture_output=True)
  record = json.loads(out.read_text())
  assert [f["token"] for f in record["features"]] == (
      "[CLS] the man went to the store . [SEP] he bought milk . [SEP]".split())
  assert len(record["features"][0]["layers"][1]["values"]) == 128
