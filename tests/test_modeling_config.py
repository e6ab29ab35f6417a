"""BertConfig: Google's bert_config.json keys and defaults, validation errors, presets."""

import json

import pytest

import modeling
from tests.tiny_models import TINY_BERT


def test_config_json_round_trip_has_googles_keys(tmp_path):
  path = tmp_path / "bert_config.json"
  path.write_text(TINY_BERT.to_json_string())
  data = json.loads(path.read_text())
  assert sorted(data) == sorted([
      "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
      "intermediate_size", "hidden_act", "hidden_dropout_prob", "attention_probs_dropout_prob",
      "max_position_embeddings", "type_vocab_size", "initializer_range"])
  assert modeling.BertConfig.from_json_file(path) == TINY_BERT
  assert [p.name for p in tmp_path.iterdir()] == ["bert_config.json"]  # no temp file left


def test_config_reads_googles_fixture(shared_dir):
  config = modeling.BertConfig.from_json_file(
      shared_dir / "fixtures" / "google_bert_tiny" / "bert_config.json")
  assert (config.vocab_size, config.hidden_size, config.num_hidden_layers) == (30522, 128, 2)
  assert config.hidden_act == "gelu" and config.type_vocab_size == 2


SHAPES = dict(vocab_size=10, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
              intermediate_size=16, max_position_embeddings=32, type_vocab_size=2)


def test_googles_extra_keys_are_ignored_and_other_keys_take_googles_defaults(caplog):
  config = modeling.BertConfig.from_dict(dict(SHAPES, directionality="bidi", pooler_type="first"),
                                         source="multi/bert_config.json")
  assert config.hidden_act == "gelu" and config.initializer_range == 0.02
  assert ("multi/bert_config.json: ignored directionality, pooler_type (no such weights here); "
          "Google's defaults for hidden_act, hidden_dropout_prob, attention_probs_dropout_prob, "
          "initializer_range") in caplog.text


def test_a_typo_or_a_missing_shape_key_is_an_error_naming_the_file(tmp_path):
  path = tmp_path / "bert_config.json"
  values = dict(SHAPES, num_hiden_layers=2)
  del values["num_hidden_layers"], values["type_vocab_size"]
  path.write_text(json.dumps(values))
  with pytest.raises(modeling.ConfigError) as error:
    modeling.BertConfig.from_json_file(path)
  assert str(error.value) == (
      f"{path}: unknown key 'num_hiden_layers' (did you mean 'num_hidden_layers'?); missing "
      "required keys 'num_hidden_layers', 'type_vocab_size'")


@pytest.mark.parametrize("values, message", [
    (dict(SHAPES, hidden_size=100, num_attention_heads=12),
     r"hidden_size \(100\) is not a multiple of num_attention_heads \(12\)"),
    (dict(SHAPES, vocab_size=0), "vocab_size must be a positive integer, got 0"),
    (dict(SHAPES, hidden_act="gleu"), "hidden_act must be one of .* got 'gleu'"),
    (dict(SHAPES, hidden_dropout_prob=1.5), r"hidden_dropout_prob must be a number in"),
    ({k: v for k, v in SHAPES.items() if k != "vocab_size"}, "missing required key 'vocab_size'"),
    ([1, 2], "expected a JSON object"),
])
def test_config_validation_errors(values, message):
  with pytest.raises(modeling.ConfigError, match=message):
    modeling.BertConfig.from_dict(values)


def test_malformed_config_file_names_file_and_line(tmp_path):
  path = tmp_path / "bert_config.json"
  path.write_text('{\n  "vocab_size": 10,\n  "hidden_size": \n}\n')
  with pytest.raises(modeling.ConfigError, match=r"bert_config.json: not valid JSON \(line 4"):
    modeling.BertConfig.from_json_file(path)
  with pytest.raises(modeling.ConfigError, match="cannot read BERT config .*missing.json"):
    modeling.BertConfig.from_json_file(tmp_path / "missing.json")


def test_presets():
  sizes = {name: (c.num_hidden_layers, c.hidden_size, c.num_attention_heads, c.intermediate_size)
           for name in modeling.PRESETS for c in [modeling.BertConfig.preset(name)]}
  assert sizes == {"tiny": (2, 128, 2, 512), "mini": (4, 256, 4, 1024),
                   "small": (4, 512, 8, 2048), "medium": (8, 512, 8, 2048),
                   "base": (12, 768, 12, 3072), "large": (24, 1024, 16, 4096)}
  with pytest.raises(modeling.ConfigError, match="unknown preset 'huge'"):
    modeling.BertConfig.preset("huge")


def test_load_config_reads_a_file_given_as_the_config(tmp_path):
  """Any file but .safetensors is the config itself, whatever its name: a vocab.txt given by
  mistake is an error, not a reason to read the bert_config.json beside it."""
  (tmp_path / "bert_config.json").write_text(json.dumps(SHAPES))
  (tmp_path / "config.txt").write_text(json.dumps(dict(SHAPES, vocab_size=7)))
  (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\n")
  assert modeling.load_config(tmp_path / "config.txt").vocab_size == 7
  with pytest.raises(modeling.ConfigError, match=r"vocab\.txt: not valid JSON"):
    modeling.load_config(tmp_path / "vocab.txt")
  assert modeling.load_config(tmp_path / "model.ckpt-5") == modeling.BertConfig.from_dict(SHAPES)
