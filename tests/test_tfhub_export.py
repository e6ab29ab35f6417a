"""export_tfhub.py: TF Hub's encoder and preprocessing SavedModels, as a TF Hub user sees them."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text as tf_text

from cli import FlagError
import modeling
from tests.paths import REPO
import tfhub
from tokenization import resolve_do_lower_case
import tokenization
from tokenization.in_graph import InGraphTokenizer, truncated_lengths

TOL = 1e-5  # Against the fixtures' references; never loosened.
SAVED_MODEL_CLI = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")


@pytest.fixture(scope="module")
def exports(shared_dir, minilm_dir, tmp_path_factory):
  """The three exports, then what tests/tfhub_user.py computed from them in a fresh process."""
  tiny = shared_dir / "fixtures" / "google_bert_tiny"
  root = tmp_path_factory.mktemp("tfhub")
  paths = {"preprocessing": root / "preprocessing", "mlm": root / "tiny_mlm",
           "minilm": root / "minilm"}
  minilm_vocab = os.path.join(minilm_dir, "vocab.txt")
  tfhub.export_saved_model("preprocessing", paths["preprocessing"], minilm_vocab,
                           do_lower_case=True)
  tfhub.export_saved_model("model_with_mlm", paths["mlm"], tiny / "vocab.txt",
                           do_lower_case=True, bert_config_file=tiny / "bert_config.json",
                           model_checkpoint_path=tiny / "bert_model.ckpt")
  tfhub.export_saved_model("model", paths["minilm"], minilm_vocab, do_lower_case=True,
                           model_checkpoint_path=minilm_dir)
  out = root / "user.npz"
  # No PYTHONPATH and another directory: the user's process cannot import our packages.
  env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
  run = subprocess.run([sys.executable, str(REPO / "tests" / "tfhub_user.py"), str(out),
                        str(paths["preprocessing"]), str(paths["mlm"]), str(paths["minilm"]),
                        str(shared_dir / "fixtures")], cwd=root, env=env, capture_output=True,
                       text=True, check=False)
  assert run.returncode == 0, run.stderr[-3000:]
  return paths, dict(np.load(out))


@pytest.fixture(scope="module")
def tiny_ref(shared_dir):
  return np.load(shared_dir / "fixtures" / "google_bert_tiny" / "reference.npz")


@pytest.fixture(scope="module")
def minilm_ref(shared_dir):
  return np.load(shared_dir / "fixtures" / "minilm_reference.npz")


@pytest.mark.slow
def test_preprocessing_gives_googles_ids_for_pairs(exports, minilm_ref):
  _, user = exports
  np.testing.assert_array_equal(user["pair_input_word_ids"], minilm_ref["input_ids"])
  np.testing.assert_array_equal(user["pair_input_mask"], minilm_ref["attention_mask"])
  np.testing.assert_array_equal(user["pair_input_type_ids"], minilm_ref["token_type_ids"])


@pytest.mark.slow
def test_preprocessing_default_call_and_tokenize(exports, minilm_ref):
  _, user = exports
  ids = user["single_input_word_ids"]
  assert ids.shape == (8, 128)  # --default_seq_length
  # Text A alone: [CLS] A [SEP], the reference's first rows are single sentences.
  for row in np.flatnonzero(~minilm_ref["is_pair"]):
    np.testing.assert_array_equal(ids[row, :64], minilm_ref["input_ids"][row])
  assert not user["single_input_type_ids"].any()
  # "Hello unaffable world!" -> [hello] [un ##aff ##able] [world] [!], -1 padded.
  np.testing.assert_array_equal(user["words"], [[7592, -1, -1], [14477, 20961, 3468],
                                                [2088, -1, -1], [999, -1, -1]])
  np.testing.assert_array_equal(user["special_tokens"], [30522, 101, 102, 0, 103])


@pytest.mark.slow
def test_encoder_with_mlm_equals_googles_outputs(exports, tiny_ref):
  _, user = exports
  for ours, ref in [("tiny_sequence_output", "sequence_output"),
                    ("tiny_pooled_output", "pooled_output"), ("tiny_default", "pooled_output"),
                    ("tiny_encoder_outputs", "all_encoder_layers"),
                    ("tiny_mlm_logits", "masked_lm_logits"),
                    ("tiny_served_sequence_output", "sequence_output"),
                    ("tiny_served_mlm_logits", "masked_lm_logits")]:
    np.testing.assert_allclose(user[ours], tiny_ref[ref], atol=TOL, rtol=0, err_msg=ours)
  np.testing.assert_allclose(user["tiny_served_layer_0"], tiny_ref["all_encoder_layers"][0],
                             atol=TOL, rtol=0)
  assert bool(user["tiny_do_lower_case"])
  assert user["tiny_dropout_difference"] > 1e-3  # training=True applies dropout


@pytest.mark.slow
def test_raw_text_through_both_savedmodels_equals_hf(exports, minilm_ref):
  _, user = exports
  real = minilm_ref["attention_mask"].astype(bool)
  np.testing.assert_allclose(user["minilm_sequence_output"][real],
                             minilm_ref["last_hidden_state"][real], atol=TOL, rtol=0)
  np.testing.assert_allclose(user["minilm_pooled_output"], minilm_ref["pooler_output"],
                             atol=TOL, rtol=0)
  np.testing.assert_array_equal(user["minilm_encoder_outputs"][-1],
                                user["minilm_sequence_output"])


@pytest.mark.slow
def test_hub_keras_layer_fine_tunes_the_encoder(exports):
  _, user = exports
  assert int(user["fine_tune_weights"]) == 39  # the encoder's weights only, not the MLM head
  assert user["fine_tune_change"] > 1e-4
  loss = user["fine_tune_loss"]
  assert loss[-1] < 0.1 * loss[0], loss  # it learns the 8 labels


@pytest.mark.slow
def test_saved_model_cli_lists_the_signatures(exports):
  paths, _ = exports
  shown = subprocess.run([SAVED_MODEL_CLI, "show", "--dir", str(paths["mlm"]), "--all"],
                         capture_output=True, text=True, check=True).stdout
  assert "signature_def['serving_default']" in shown and "signature_def['mlm']" in shown
  for name in ("input_word_ids", "input_mask", "input_type_ids", "masked_lm_positions",
               "pooled_output", "sequence_output", "encoder_outputs_1", "mlm_logits"):
    assert f"['{name}']" in shown, name
  record = json.loads((paths["mlm"] / "assets" / "tfhub_export.json").read_text())
  assert record["export_type"] == "model_with_mlm" and record["do_lower_case"] is True


def test_pair_truncation_is_googles_and_round_robin():
  """Google's longer-first cut and tf-text's round robin keep the same tokens for two segments."""
  lengths = [(a, b) for a in range(13) for b in range(13)]
  len_a = tf.constant([a for a, _ in lengths], tf.int64)
  len_b = tf.constant([b for _, b in lengths], tf.int64)
  for budget in range(1, 20):
    google_a, google_b = truncated_lengths(len_a, len_b, budget)
    segments = [tf.RaggedTensor.from_row_lengths(tf.zeros([tf.reduce_sum(n)], tf.int32), n)
                for n in (len_a, len_b)]
    robin_a, robin_b = tf_text.RoundRobinTrimmer(budget).trim(segments)
    np.testing.assert_array_equal(google_a, robin_a.row_lengths())
    np.testing.assert_array_equal(google_b, robin_b.row_lengths())


def test_tokenize_words_groups_the_pieces_of_googles_words(google_vocab):
  texts = ["Hello unaffable world!", "Ünïcödé naïve café, 3.14 — ok?", "", "a  b\tc"]
  basic = tokenization.BasicTokenizer(do_lower_case=True)
  full = tokenization.FullTokenizer(google_vocab, do_lower_case=True)
  words = InGraphTokenizer(google_vocab, True).tokenize_words(texts)
  assert words.ragged_rank == 2
  for text, row in zip(texts, words.to_list()):
    assert row == [full.convert_tokens_to_ids(full.wordpiece_tokenizer.tokenize(word))
                   for word in basic.tokenize(text)]



def test_export_path_that_is_not_our_savedmodel_is_never_touched(tmp_path, shared_dir):
  vocab = shared_dir / "fixtures" / "google_bert_tiny" / "vocab.txt"
  (tmp_path / "notes.txt").write_text("mine")
  with pytest.raises(FlagError, match="--export_path .* exists and is not a SavedModel written "
                     "by export_tfhub: nothing was touched"):
    tfhub.export_saved_model("preprocessing", tmp_path, vocab, do_lower_case=True)
  assert os.listdir(tmp_path) == ["notes.txt"]


@pytest.mark.slow
def test_an_export_is_replaced_only_with_overwrite_export(tmp_path, shared_dir):
  vocab = shared_dir / "fixtures" / "google_bert_tiny" / "vocab.txt"
  path = tmp_path / "pre"
  tfhub.export_saved_model("preprocessing", path, vocab, do_lower_case=True,
                           default_seq_length=16)
  with pytest.raises(FlagError, match="holds a SavedModel: pass --overwrite_export"):
    tfhub.export_saved_model("preprocessing", path, vocab, do_lower_case=False)
  tfhub.export_saved_model("preprocessing", path, vocab, do_lower_case=False, overwrite=True)
  assert json.loads((path / "assets" / "tfhub_export.json").read_text())["do_lower_case"] is False
  assert sorted(os.listdir(tmp_path)) == ["pre"]  # no staging directory left


def test_do_lower_case_comes_from_the_flag_or_the_vocab_path():
  assert resolve_do_lower_case(False, "/m/uncased_L-12_H-768_A-12/vocab.txt") is False
  assert resolve_do_lower_case(None, "/m/uncased_L-12_H-768_A-12/vocab.txt") is True
  assert resolve_do_lower_case(None, "/m/cased_L-12_H-768_A-12/vocab.txt") is False
  with pytest.raises(FlagError, match="says neither 'uncased' nor 'cased': pass --do_lower_case"):
    resolve_do_lower_case(None, "/m/my_model/vocab.txt")


@pytest.mark.parametrize("export_type, kwargs, message", [
    ("model", {}, "--export_type=model needs --model_checkpoint_path"),
    ("preprocessing", {"default_seq_length": 2}, "--default_seq_length must be at least 3"),
    ("model", {"model_checkpoint_path": "/no/such/ckpt"}, "no checkpoint at '/no/such/ckpt'"),
])
def test_flag_errors_before_any_work(tmp_path, google_vocab, export_type, kwargs, message):
  with pytest.raises((FlagError, modeling.CheckpointError), match=message):
    tfhub.export_saved_model(export_type, tmp_path / "out", google_vocab, do_lower_case=True,
                             **kwargs)
  assert not os.listdir(tmp_path)


def test_vocab_larger_than_the_model_is_refused(tmp_path, shared_dir, google_vocab):
  config = tmp_path / "bert_config.json"
  config.write_text(modeling.BertConfig.preset("tiny", vocab_size=100).to_json_string())
  with pytest.raises(tokenization.VocabError, match="has 30522 tokens but the model config .* "
                     "has vocab_size 100"):
    tfhub.export_saved_model("model", tmp_path / "out", google_vocab, do_lower_case=True,
                             bert_config_file=config, model_checkpoint_path=shared_dir / "fixtures"
                             / "google_bert_tiny" / "bert_model.ckpt")


def test_model_with_mlm_needs_a_masked_lm_head(tmp_path, minilm_dir):
  with pytest.raises(modeling.CheckpointError, match="has no masked-LM head .* use "
                     "--export_type=model"):
    tfhub.export_saved_model("model_with_mlm", tmp_path / "out",
                             os.path.join(minilm_dir, "vocab.txt"), do_lower_case=True,
                             model_checkpoint_path=minilm_dir)
  assert not os.listdir(tmp_path)


def test_cli_error_is_one_line(tmp_path):
  out = subprocess.run([sys.executable, str(REPO / "export_tfhub.py"), "--export_type=model",
                        f"--export_path={tmp_path / 'out'}", f"--vocab_file={tmp_path / 'v.txt'}",
                        "--do_lower_case"], capture_output=True, text=True, check=False,
                       env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  assert out.returncode == 1
  assert out.stderr.strip().splitlines()[-1] == (
      "export_tfhub: error: --export_type=model needs --model_checkpoint_path")
