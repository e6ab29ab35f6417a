"""export_huggingface.py: HF's tensor names, shapes and dtypes for each head, the config's GELU,
the tokenizer files, round trips through our HF reader, and the one-line errors.

The expected names are those transformers 5.23 `save_pretrained` writes for each class (the
real MiniLM file for BertModel); agreement with transformers' PyTorch models is measured by
bench/hf_export.py, which needs torch.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from safetensors import safe_open
import tensorflow as tf

from cli import FlagError
from classification import run as classification_run
import fileio
import modeling
from modeling import activations
from modeling.checkpoints import huggingface_export
from modeling.checkpoints import names as names_lib
from tests.classifier_jobs import classifier_options
from tests.paths import REPO
from tests.tiny_models import TINY_BERT, bert_inputs
import tokenization

TOL = 1e-5
# HF's names of one encoder layer's weights, and of the embeddings, after "encoder.layer.N.".
_LAYER = [f"attention.self.{p}.{w}" for p in ("query", "key", "value") for w in ("weight", "bias")]
_LAYER += [f"{scope}.{w}" for scope in ("attention.output.dense", "attention.output.LayerNorm",
                                        "intermediate.dense", "output.dense", "output.LayerNorm")
           for w in ("weight", "bias")]
_EMBEDDINGS = ["embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight",
               "embeddings.token_type_embeddings.weight", "embeddings.LayerNorm.weight",
               "embeddings.LayerNorm.bias"]
_POOLER = ["pooler.dense.weight", "pooler.dense.bias"]
_HEADS = {
    "BertForPreTraining": ["cls.predictions.bias", "cls.predictions.transform.dense.weight",
                           "cls.predictions.transform.dense.bias",
                           "cls.predictions.transform.LayerNorm.weight",
                           "cls.predictions.transform.LayerNorm.bias",
                           "cls.seq_relationship.weight", "cls.seq_relationship.bias"],
    "BertForSequenceClassification": ["classifier.weight", "classifier.bias"],
    "BertForQuestionAnswering": ["qa_outputs.weight", "qa_outputs.bias"],
}


def hf_names(architecture, layers):
  """The tensor names transformers writes for `architecture` with `layers` layers."""
  encoder = _EMBEDDINGS + [f"encoder.layer.{i}.{n}" for i in range(layers) for n in _LAYER]
  if architecture != "BertForQuestionAnswering":  # built without a pooler
    encoder += _POOLER
  if architecture == "BertModel":
    return set(encoder)
  return {"bert." + n for n in encoder} | set(_HEADS[architecture])


def read_safetensors(directory):
  """({name: array}, metadata) of directory/model.safetensors."""
  with safe_open(os.path.join(directory, "model.safetensors"), framework="np") as f:
    return {k: f.get_tensor(k) for k in f.keys()}, f.metadata()


def read_json(directory, name):
  with open(os.path.join(directory, name), encoding="utf-8") as f:
    return json.load(f)


def weights(model):
  return {name: np.array(var.numpy()) for name, var in names_lib.model_variables(model).items()}


def export(checkpoint, out, vocab, **kwargs):
  kwargs.setdefault("do_lower_case", True)
  return huggingface_export.export_huggingface(checkpoint, out, vocab, **kwargs)


@pytest.fixture(scope="module")
def tiny(shared_dir):
  return shared_dir / "fixtures" / "google_bert_tiny"


@pytest.fixture(scope="module")
def tiny_export(tiny, tmp_path_factory):
  out = tmp_path_factory.mktemp("tiny") / "hf"
  assert export(tiny / "bert_model.ckpt", out, tiny / "vocab.txt") == "BertForPreTraining"
  return out


@pytest.fixture(scope="module")
def minilm_export(minilm_dir, tmp_path_factory):
  out = tmp_path_factory.mktemp("minilm") / "hf"
  assert export(minilm_dir, out, os.path.join(minilm_dir, "vocab.txt")) == "BertModel"
  return out


@pytest.fixture(scope="module")
def classifier_dir(tmp_path_factory):
  """A run_classifier output_dir: the tiny helper config, one training step on sample data."""
  tmp = tmp_path_factory.mktemp("classifier")
  classification_run.run_classifier(classifier_options(
      tmp, num_train_epochs=0.02, train_batch_size=8, seed=1))
  return tmp / "out"


def test_name_map_is_one_map_both_ways(tiny):
  google = tf.train.load_checkpoint(str(tiny / "bert_model.ckpt")).get_variable_to_shape_map()
  heads = ["output_weights", "output_bias", "cls/squad/output_weights", "cls/squad/output_bias"]
  for name in [n for n in google if not names_lib.is_optimizer_variable(n)] + heads:
    hf_name, transposed = names_lib.to_huggingface(name)
    assert names_lib.from_huggingface(hf_name) == (name, transposed)
    if name.startswith("bert/"):
      assert names_lib.from_huggingface("bert." + hf_name) == (name, transposed)
  # What older transformers versions wrote; what is no weight.
  assert names_lib.from_huggingface("bert.encoder.layer.3.output.LayerNorm.gamma") == (
      "bert/encoder/layer_3/output/LayerNorm/gamma", False)
  assert names_lib.from_huggingface("cls.predictions.decoder.bias") == (
      "cls/predictions/output_bias", False)
  for other in ("embeddings.position_ids", "cls.predictions.decoder.weight",
                "encoder.layer.0.attention.self.distance_embedding.weight", "lm_head.weight"):
    assert names_lib.from_huggingface(other) is None
  assert names_lib.to_huggingface("bert/cls/predictions/transform/dense/kernel") is None


def test_hidden_act_keeps_its_function_through_hf_names():
  assert activations.to_huggingface_name("gelu") == "gelu_new"  # Google's gelu is the tanh one
  assert activations.to_huggingface_name("gelu_exact") == "gelu"
  for name in activations.NAMES:
    back = activations.from_huggingface_name(activations.to_huggingface_name(name))
    assert activations.get(back) is activations.get(name)


def test_minilm_export_is_the_real_hf_file(minilm_dir, minilm_export):
  ours, metadata = read_safetensors(minilm_export)
  theirs, _ = read_safetensors(minilm_dir)
  # transformers >= 4.31 no longer writes the position_ids buffer the 4.8-era file holds.
  assert theirs.pop("embeddings.position_ids").dtype == np.int64
  assert set(ours) == set(theirs) == hf_names("BertModel", 6)
  for name, value in theirs.items():
    assert ours[name].dtype == np.float32 and ours[name].shape == value.shape, name
    np.testing.assert_array_equal(ours[name], value, err_msg=name)
  assert metadata == {"format": "pt"}
  config = read_json(minilm_export, "config.json")
  assert config["hidden_act"] == "gelu" and config["architectures"] == ["BertModel"]
  assert "id2label" not in config
  assert modeling.load_config(minilm_export) == modeling.load_config(minilm_dir)


def round_trip(model, original, exported, features, skip=()):
  """Loads `original`, then `exported` into `model`: asserts equal weights (but `skip`'s) and
  outputs; returns the second load's report and the outputs."""
  modeling.load_checkpoint(model, original)
  before, expected = weights(model), model(features)
  for variable in model.variables:  # so that a weight the export misses cannot pass
    variable.assign(tf.zeros_like(variable) + 0.5)
  report = modeling.load_checkpoint(model, exported)
  after = weights(model)
  for name, value in before.items():
    if name not in skip:
      np.testing.assert_array_equal(after[name], value, err_msg=name)
  got = model(features)
  tf.nest.map_structure(np.testing.assert_array_equal, got, expected)
  return report, got


def test_minilm_round_trip_gives_the_same_outputs(minilm_dir, minilm_export):
  config = modeling.load_config(minilm_export)
  report, _ = round_trip(modeling.build_encoder(config), minilm_dir,
                         minilm_export, bert_inputs(batch=2, seq=12, vocab=config.vocab_size))
  assert len(report.loaded) == 103 and report.heads_absent == [] and report.ignored == []


def test_tokenizer_files(minilm_dir, minilm_export, tiny_export, tiny):
  assert sorted(os.listdir(minilm_export)) == sorted(huggingface_export.OUTPUT_FILES)
  with open(os.path.join(minilm_dir, "vocab.txt"), encoding="utf-8") as f:
    assert (minilm_export / "vocab.txt").read_text(encoding="utf-8") == f.read()
  tokens = {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]",
            "cls_token": "[CLS]", "mask_token": "[MASK]"}
  assert read_json(tiny_export, "special_tokens_map.json") == tokens
  config = read_json(tiny_export, "tokenizer_config.json")
  assert {k: config[k] for k in tokens} == tokens
  assert (config["tokenizer_class"], config["do_lower_case"], config["strip_accents"],
          config["tokenize_chinese_chars"], config["model_max_length"]) == (
              "BertTokenizer", True, None, True, 512)
  assert tokenization.load_vocab(str(tiny_export / "vocab.txt")) == tokenization.load_vocab(
      str(tiny / "vocab.txt"))


def test_google_checkpoint_exports_as_bert_for_pretraining(tiny, tiny_export):
  tensors, _ = read_safetensors(tiny_export)
  assert set(tensors) == hf_names("BertForPreTraining", 2)
  reader = tf.train.load_checkpoint(str(tiny / "bert_model.ckpt"))
  np.testing.assert_array_equal(tensors["bert.encoder.layer.1.intermediate.dense.weight"],
                                reader.get_tensor("bert/encoder/layer_1/intermediate/dense/kernel").T)
  assert tensors["cls.seq_relationship.weight"].shape == (2, 128)
  assert all(value.dtype == np.float32 for value in tensors.values())
  config = read_json(tiny_export, "config.json")
  # Google's "gelu" is the tanh approximation: HF's name for it is "gelu_new".
  assert config["hidden_act"] == "gelu_new"
  assert (config["architectures"], config["model_type"], config["layer_norm_eps"],
          config["pad_token_id"]) == (["BertForPreTraining"], "bert", 1e-12, 0)
  google = modeling.load_config(tiny / "bert_config.json")
  assert modeling.load_config(tiny_export) == google.replace(hidden_act="gelu_tanh")


def test_google_checkpoint_round_trip(tiny, tiny_export):
  ref = np.load(tiny / "reference.npz")
  features = {k: ref[k] for k in ("input_ids", "input_mask", "segment_ids",
                                  "masked_lm_positions")}
  model = modeling.build_pretraining_model(modeling.load_config(tiny_export))
  report, out = round_trip(model, tiny / "bert_model.ckpt", tiny_export, features)
  assert len(report.loaded) == 46 and report.heads_absent == [] and report.ignored == []
  for key in ("masked_lm_logits", "next_sentence_logits", "pooled_output"):
    assert np.abs(out[key].numpy() - ref[key]).max() < TOL  # Google's own outputs


@pytest.mark.slow  # its fixture trains run_classifier for a step
def test_run_classifier_output_dir_exports_its_labels(classifier_dir, tmp_path):
  out = tmp_path / "hf"
  assert export(classifier_dir, out, REPO / "sample_data" / "vocab.txt") == (
      "BertForSequenceClassification")
  tensors, _ = read_safetensors(out)
  assert set(tensors) == hf_names("BertForSequenceClassification", 2)
  assert tensors["classifier.weight"].shape == (2, 64)
  config = read_json(out, "config.json")
  labels, _ = classification_run.labels_lib.load_label_list(str(classifier_dir))
  assert config["id2label"] == {str(i): label for i, label in enumerate(labels)}
  assert config["label2id"] == {label: i for i, label in enumerate(labels)}
  assert config["problem_type"] == "single_label_classification"
  bert_config = modeling.load_config(classifier_dir)
  report, _ = round_trip(modeling.build_classifier(bert_config, 2),
                         classifier_dir, out, bert_inputs(vocab=bert_config.vocab_size))
  assert len(report.loaded) == 2 * 16 + 9 and report.heads_absent == []


def _save_trainer_checkpoint(model, directory, **extra):
  """What the trainers write into output_dir: a model.ckpt-N of `modeling.new_checkpoint`."""
  checkpoint = modeling.new_checkpoint(model, **extra)
  tf.train.CheckpointManager(checkpoint, str(directory), max_to_keep=1).save(checkpoint_number=3)


def test_regression_output_dir_says_so(tmp_path):
  """A task_distill output_dir's regression student: its checkpoint also holds the projections."""
  model = modeling.build_classifier(TINY_BERT, 1)
  _save_trainer_checkpoint(model, tmp_path / "run", projections=[tf.Variable(tf.ones([32, 64]))])
  modeling.save_config(TINY_BERT, str(tmp_path / "run"))
  classification_run.labels_lib.save_label_list(str(tmp_path / "run"), [], is_regression=True)
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("".join(f"[unused{i}]\n" for i in range(94)) +
                   "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n", encoding="utf-8")
  assert export(tmp_path / "run", tmp_path / "hf", vocab, do_lower_case=False) == (
      "BertForSequenceClassification")
  assert read_safetensors(tmp_path / "hf")[0]["classifier.weight"].shape == (1, 32)
  config = read_json(tmp_path / "hf", "config.json")
  assert (config["problem_type"], config["id2label"], config["pad_token_id"]) == (
      "regression", {"0": "LABEL_0"}, 94)
  assert read_json(tmp_path / "hf", "tokenizer_config.json")["do_lower_case"] is False


@pytest.fixture(scope="module")
def squad_dir(tiny, tmp_path_factory):
  """A run_squad output_dir (no bert_config.json there): the tiny encoder, a span layer."""
  directory = tmp_path_factory.mktemp("squad") / "out"
  config = modeling.load_config(tiny / "bert_config.json")
  model = modeling.build_squad_model(config)
  modeling.load_checkpoint(model, tiny / "bert_model.ckpt")
  span = model.get_layer("cls_squad")
  span.output_weights.assign(np.random.default_rng(3).normal(0, 0.5, [2, 128]))
  span.output_bias.assign([0.25, -0.5])
  _save_trainer_checkpoint(model, directory)
  return directory


def test_run_squad_output_dir_exports_question_answering(squad_dir, tiny, tmp_path):
  config_file = tiny / "bert_config.json"
  with pytest.raises(modeling.ConfigError, match="no bert_config.json beside checkpoint"):
    export(squad_dir, tmp_path / "hf", tiny / "vocab.txt")
  assert not (tmp_path / "hf").exists()
  assert export(squad_dir, tmp_path / "hf", tiny / "vocab.txt",
                bert_config_file=config_file) == "BertForQuestionAnswering"
  tensors, _ = read_safetensors(tmp_path / "hf")
  assert set(tensors) == hf_names("BertForQuestionAnswering", 2)  # no pooler, as HF's
  assert tensors["qa_outputs.weight"].shape == (2, 128)
  config = modeling.load_config(config_file)
  report, _ = round_trip(modeling.build_squad_model(config), squad_dir,
                         tmp_path / "hf", bert_inputs(vocab=config.vocab_size),
                         skip=("bert/pooler/dense/kernel", "bert/pooler/dense/bias"))
  assert report.heads_absent == [names_lib.POOLER_LABEL]
  # Only a model that does not use the pooler may miss it.
  with pytest.raises(modeling.CheckpointError, match="missing bert/pooler/dense/kernel"):
    modeling.load_checkpoint(modeling.build_encoder(config), tmp_path / "hf")


def test_outputs_are_replaced_only_with_overwrite(minilm_dir, tmp_path):
  out = tmp_path / "hf"
  out.mkdir()
  (out / "README.md").write_text("mine")
  (out / "config.json").write_text("{}")
  vocab = os.path.join(minilm_dir, "vocab.txt")
  with pytest.raises(fileio.OutputError, match="output file exists: .*config.json.* --overwrite"):
    export(minilm_dir, out, vocab)
  assert sorted(os.listdir(out)) == ["README.md", "config.json"]
  export(minilm_dir, out, vocab, overwrite=True)
  assert sorted(os.listdir(out)) == sorted(huggingface_export.OUTPUT_FILES + ("README.md",))
  assert (out / "README.md").read_text() == "mine"
  assert read_json(out, "config.json")["architectures"] == ["BertModel"]


@pytest.mark.parametrize("case, error, message", [
    ("missing checkpoint", modeling.CheckpointNotFoundError, "no checkpoint at '.*no/such'"),
    ("unreadable config", modeling.ConfigError, "bad.json: not valid JSON"),
    ("vocab size", tokenization.VocabError, "has 30522 tokens but the model config .* has "
     "vocab_size 100"),
    ("output is the checkpoint's directory", FlagError, "is the directory of --init_checkpoint"),
    ("output is the vocab", fileio.OutputError, "vocab.txt' is also an input \\(--vocab_file\\)"),
    ("output is a file", FlagError, "--output_dir .* is a file, not a directory"),
    ("casing", FlagError, "says neither 'uncased' nor 'cased': pass --do_lower_case"),
    ("labels", modeling.CheckpointError, "label_list.json has 3 labels but the classifier layer"),
    ("special tokens", tokenization.VocabError, "lacks BERT's special tokens \\[MASK\\]"),
])
def test_bad_input_is_refused_before_writing(case, error, message, tiny, tmp_path):
  checkpoint, vocab, out = tiny / "bert_model.ckpt", tmp_path / "vocab.txt", tmp_path / "hf"
  vocab.write_bytes((tiny / "vocab.txt").read_bytes())
  kwargs = {}
  if case == "missing checkpoint":
    checkpoint = tmp_path / "no" / "such"
  elif case == "unreadable config":
    kwargs["bert_config_file"] = tmp_path / "bad.json"
    kwargs["bert_config_file"].write_text("{")
  elif case == "vocab size":
    kwargs["bert_config_file"] = tmp_path / "small.json"
    kwargs["bert_config_file"].write_text(
        modeling.BertConfig.preset("tiny", vocab_size=100).to_json_string())
  elif case == "output is the checkpoint's directory":
    out = tiny
  elif case == "output is the vocab":
    out = tmp_path
  elif case == "output is a file":
    out.write_text("mine")
  elif case == "casing":
    kwargs["do_lower_case"] = None
  elif case == "labels":
    model = modeling.build_classifier(TINY_BERT, 2)
    checkpoint = tmp_path / "run"
    _save_trainer_checkpoint(model, checkpoint)
    modeling.save_config(TINY_BERT, str(checkpoint))
    classification_run.labels_lib.save_label_list(str(checkpoint), ["a", "b", "c"])
    vocab.write_text("".join(f"[unused{i}]\n" for i in range(94)) +
                     "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n", encoding="utf-8")
  elif case == "special tokens":
    vocab.write_text((tiny / "vocab.txt").read_text(encoding="utf-8").replace("[MASK]\n", "[m]\n"),
                     encoding="utf-8")
  before = {d: sorted(os.listdir(d)) for d in (tmp_path, out) if d.is_dir()}
  with pytest.raises(error, match=message):
    export(checkpoint, out, vocab, **kwargs)
  assert {d: sorted(os.listdir(d)) for d in (tmp_path, out) if d.is_dir()} == before


def test_cli_error_is_one_line(tmp_path):
  out = subprocess.run([sys.executable, str(REPO / "export_huggingface.py"),
                        f"--init_checkpoint={tmp_path / 'missing'}",
                        f"--vocab_file={tmp_path / 'vocab.txt'}", "--do_lower_case",
                        f"--output_dir={tmp_path / 'hf'}"],
                       capture_output=True, text=True, check=False,
                       env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  assert out.returncode == 1
  assert out.stderr.strip().splitlines()[-1] == (
      f"export_huggingface: error: no checkpoint at '{tmp_path / 'missing'}': neither "
      f"{tmp_path / 'missing'}.index nor a directory with bert_model.ckpt.*, a TF2 checkpoint "
      "or model.safetensors")
  assert not (tmp_path / "hf").exists()
