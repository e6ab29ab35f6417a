"""HuggingFace safetensors checkpoints: real MiniLM weights against HF's and Google's outputs."""

import json

import numpy as np
import pytest
from safetensors.numpy import save_file

import modeling
from tests.checkpoint_files import read_variables
from modeling.kernels import FAMILIES

TOL = 1e-5


@pytest.fixture(scope="module")
def minilm_ref(shared_dir):
  return dict(np.load(shared_dir / "fixtures" / "minilm_reference.npz"))


@pytest.fixture(scope="module")
def minilm_features(minilm_ref):
  return {"input_ids": minilm_ref["input_ids"], "input_mask": minilm_ref["attention_mask"],
          "segment_ids": minilm_ref["token_type_ids"]}


def _sentence_embedding(sequence_output, mask):
  mask = mask[..., None].astype(np.float64)
  mean = (np.asarray(sequence_output, np.float64) * mask).sum(1) / mask.sum(1)
  return mean / np.linalg.norm(mean, axis=-1, keepdims=True)


def _run(config, path, features, kernels="fused"):
  with modeling.kernels_scope(kernels):
    encoder = modeling.build_encoder(config)
  report = modeling.load_checkpoint(encoder, path)
  out = encoder(features)
  return out["sequence_output"].numpy(), out["pooled_output"].numpy(), report


@pytest.mark.parametrize("kernels", FAMILIES)
def test_minilm_matches_huggingface_with_exact_gelu(minilm_dir, minilm_ref, minilm_features,
                                                    kernels):
  config = modeling.load_config(minilm_dir)
  assert config.hidden_act == "gelu_exact"
  assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads) == (6, 384, 12)
  assert modeling.detect_format(minilm_dir)[0] == "huggingface"
  seq, pooled, report = _run(config, minilm_dir, minilm_features, kernels)
  assert len(report.loaded) == 103 and report.ignored == ["embeddings.position_ids"]
  assert report.heads_absent == []
  real = minilm_ref["attention_mask"].astype(bool)
  assert np.abs(seq - minilm_ref["last_hidden_state"])[real].max() < TOL
  assert np.abs(pooled - minilm_ref["pooler_output"]).max() < TOL
  embedding = _sentence_embedding(seq, minilm_ref["attention_mask"])
  assert np.abs(embedding - minilm_ref["sentence_embedding"]).max() < TOL
  # The GELU meaning matters: this output is far from Google's (tanh) arrays.
  assert np.abs(seq - minilm_ref["google_sequence_output"])[real].max() > 1e-3


def test_minilm_with_tanh_gelu_matches_googles_code(minilm_dir, minilm_ref, minilm_features):
  config = modeling.load_config(minilm_dir).replace(hidden_act="gelu")  # Google's meaning
  seq, pooled, _ = _run(config, minilm_dir / "model.safetensors", minilm_features)
  real = minilm_ref["attention_mask"].astype(bool)
  assert np.abs(seq - minilm_ref["google_sequence_output"])[real].max() < TOL
  assert np.abs(pooled - minilm_ref["google_pooled_output"]).max() < TOL
  embedding = _sentence_embedding(seq, minilm_ref["attention_mask"])
  assert np.abs(embedding - minilm_ref["google_sentence_embedding"]).max() < TOL


def _google_to_hf(google, prefix="bert."):
  """Test-side conversion of Google's tiny checkpoint to HF BertForPreTraining names."""
  hf = {}
  for name, value in google.items():
    if name.endswith(("adam_m", "adam_v")) or name == "global_step":
      continue
    if name == "cls/predictions/output_bias":
      hf["cls.predictions.bias"] = value
      continue
    if name.startswith("cls/seq_relationship/"):
      hf["cls.seq_relationship." + ("weight" if name.endswith("weights") else "bias")] = value
      continue
    key = name.replace("bert/encoder/layer_", "bert/encoder/layer/").replace("/", ".")
    key = key.replace(".gamma", ".weight").replace(".beta", ".bias")
    if key.endswith(".kernel"):
      key, value = key[:-len("kernel")] + "weight", value.T
    elif key.endswith("_embeddings"):
      key += ".weight"
    if key.startswith("bert."):
      key = prefix + key[len("bert."):]
    hf[key] = np.ascontiguousarray(value)
  hf["cls.predictions.decoder.weight"] = hf[prefix + "embeddings.word_embeddings.weight"]
  return hf


@pytest.fixture(scope="module")
def tiny_hf_dir(shared_dir, tmp_path_factory):
  tiny = shared_dir / "fixtures" / "google_bert_tiny"
  directory = tmp_path_factory.mktemp("hf_tiny")
  save_file(_google_to_hf(read_variables(tiny)), str(directory / "model.safetensors"))
  config = json.loads((tiny / "bert_config.json").read_text())
  config.update(model_type="bert", hidden_act="gelu_new", layer_norm_eps=1e-12)
  (directory / "config.json").write_text(json.dumps(config))
  return directory


def test_prefixed_names_and_heads(tiny_hf_dir, shared_dir):
  ref = np.load(shared_dir / "fixtures" / "google_bert_tiny" / "reference.npz")
  config = modeling.load_config(tiny_hf_dir)
  assert config.hidden_act == "gelu_tanh"
  model = modeling.build_pretraining_model(config)
  report = modeling.load_checkpoint(model, tiny_hf_dir)
  assert len(report.loaded) == 46 and report.ignored == ["cls.predictions.decoder.weight"]
  out = model({k: ref[k] for k in ("input_ids", "input_mask", "segment_ids",
                                   "masked_lm_positions")})
  assert np.abs(out["masked_lm_logits"].numpy() - ref["masked_lm_logits"]).max() < TOL
  assert np.abs(out["next_sentence_logits"].numpy() - ref["next_sentence_logits"]).max() < TOL
  assert np.abs(out["pooled_output"].numpy() - ref["pooled_output"]).max() < TOL


def test_untied_decoder_is_rejected(tiny_hf_dir, tmp_path):
  from safetensors.numpy import load_file  # pylint: disable=g-import-not-at-top
  tensors = load_file(str(tiny_hf_dir / "model.safetensors"))
  tensors["cls.predictions.decoder.weight"] = tensors["cls.predictions.decoder.weight"] + 1
  save_file(tensors, str(tmp_path / "model.safetensors"))
  model = modeling.build_encoder(modeling.load_config(tiny_hf_dir))
  with pytest.raises(modeling.CheckpointError, match="differs from the word embeddings"):
    modeling.load_checkpoint(model, tmp_path)


def test_hf_errors(tmp_path, minilm_dir):
  config = modeling.load_config(minilm_dir)
  with pytest.raises(modeling.CheckpointError,
                     match=r"vocab_size 30522 in checkpoint vs 100 in model"):
    modeling.load_checkpoint(modeling.build_encoder(config.replace(vocab_size=100)), minilm_dir)
  with pytest.raises(modeling.CheckpointError, match="checkpoint has 6 layers, model has 2"):
    modeling.load_checkpoint(modeling.build_encoder(config.replace(num_hidden_layers=2)),
                             minilm_dir)
  small = modeling.build_encoder(config.replace(vocab_size=10, num_hidden_layers=1))
  save_file({"encoder.weight": np.zeros([2, 2], np.float32)}, str(tmp_path / "model.safetensors"))
  with pytest.raises(modeling.CheckpointError, match="is not a BERT checkpoint"):
    modeling.load_checkpoint(small, tmp_path)
  (tmp_path / "config.json").write_text(json.dumps({"model_type": "roberta", "vocab_size": 5}))
  with pytest.raises(modeling.ConfigError, match="model_type is 'roberta', not 'bert'"):
    modeling.load_config(tmp_path)
  (tmp_path / "config.json").write_text(json.dumps({"vocab_size": 5, "hidden_act": "gelu_fast2"}))
  with pytest.raises(modeling.ConfigError, match="unsupported HuggingFace hidden_act"):
    modeling.load_config(tmp_path)
  with pytest.raises(FileNotFoundError, match="no HuggingFace weights at .*missing.safetensors"):
    modeling.load_checkpoint(small, tmp_path / "missing.safetensors")
  (tmp_path / "bad.safetensors").write_bytes(b"garbage")
  with pytest.raises(modeling.CheckpointError, match="cannot read safetensors file"):
    modeling.load_checkpoint(small, tmp_path / "bad.safetensors")
