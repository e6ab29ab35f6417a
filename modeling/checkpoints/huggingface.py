"""HuggingFace BERT weights (`model.safetensors` + `config.json`), read without torch.

HF names are translated to Google's (`bert/...`, `cls/...`); HF Linear weights
are [out, in] and are transposed to Google's [in, out] kernels. Both the
`bert.`-prefixed (BertForPreTraining, ...) and unprefixed (BertModel) variants
are read. HF's "gelu" is the exact erf GELU: `load_hf_config` maps it to
"gelu_exact".
"""

import json
import os
import re

import numpy as np
from safetensors import safe_open

from modeling import activations
from modeling.checkpoints.assign import (CheckpointError, CheckpointNotFoundError,
                                         assign_named_arrays)
from modeling.config import BertConfig, ConfigError

WEIGHTS_NAME = "model.safetensors"
INDEX_NAME = "model.safetensors.index.json"
CONFIG_NAME = "config.json"

# The keys HF shares with Google's config, and HF's defaults for a config.json that omits one
# (type_vocab_size differs from Google's 16).
_HF_DEFAULTS = {"vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12,
                "num_attention_heads": 12, "intermediate_size": 3072, "hidden_dropout_prob": 0.1,
                "attention_probs_dropout_prob": 0.1, "max_position_embeddings": 512,
                "type_vocab_size": 2, "initializer_range": 0.02}
_LINEAR_SCOPES = ("query", "key", "value", "dense")
_TABLES = ("word_embeddings", "position_embeddings", "token_type_embeddings")


def is_huggingface_dir(path):
  return os.path.isdir(path) and (os.path.exists(os.path.join(path, WEIGHTS_NAME)) or
                                  os.path.exists(os.path.join(path, INDEX_NAME)))


def config_from_dict(values, source="config.json"):
  """A `BertConfig` from HF's `config.json` values (HF "gelu" -> "gelu_exact")."""
  if values.get("model_type", "bert") != "bert":
    raise ConfigError(f"{source}: model_type is {values['model_type']!r}, not 'bert'")
  if values.get("position_embedding_type", "absolute") != "absolute":
    raise ConfigError(f"{source}: position_embedding_type "
                      f"{values['position_embedding_type']!r} is not supported (only 'absolute')")
  eps = values.get("layer_norm_eps", 1e-12)
  if eps != 1e-12:
    raise ConfigError(f"{source}: layer_norm_eps {eps} is not supported (BERT uses 1e-12)")
  converted = {k: values.get(k, default) for k, default in _HF_DEFAULTS.items()}
  try:
    converted["hidden_act"] = activations.from_huggingface_name(values.get("hidden_act", "gelu"))
  except ValueError as e:
    raise ConfigError(f"{source}: {e}") from None
  return BertConfig.from_dict(converted, source=source)


def load_hf_config(path):
  """Reads `config.json` from an HF model directory (or the file itself)."""
  file = os.path.join(path, CONFIG_NAME) if os.path.isdir(path) else path
  try:
    with open(file, encoding="utf-8") as f:
      values = json.load(f)
  except OSError as e:
    raise ConfigError(f"cannot read HuggingFace config {file!r}: {e.strerror}") from None
  except json.JSONDecodeError as e:
    raise ConfigError(f"{file}: not valid JSON (line {e.lineno}: {e.msg})") from None
  if not isinstance(values, dict):
    raise ConfigError(f"{file}: expected a JSON object")
  return config_from_dict(values, source=file)


def google_name(hf_name):
  """(Google name, transpose?) for an HF weight name, or None if it is no model weight."""
  name = hf_name[len("bert."):] if hf_name.startswith("bert.") else hf_name
  if name in ("cls.predictions.bias", "cls.predictions.decoder.bias"):
    return "cls/predictions/output_bias", False
  if name.startswith("cls.seq_relationship.") or name.startswith("classifier."):
    scope = "cls/seq_relationship/" if name.startswith("cls.") else ""
    last = name.rsplit(".", 1)[1]
    return {"weight": (scope + "output_weights", False),
            "bias": (scope + "output_bias", False)}.get(last)
  if name.startswith("cls.predictions.transform."):
    scope = "cls/predictions/transform/"
    name = name[len("cls.predictions.transform."):]
  elif re.match(r"^(embeddings|encoder|pooler)\.", name):
    scope = "bert/"
  else:
    return None
  name = re.sub(r"^encoder\.layer\.(\d+)\.", r"encoder.layer_\1.", name)
  parts = name.split(".")
  *path, last = parts
  if not path:
    return None
  if path[-1] == "LayerNorm":
    leaf = {"weight": "gamma", "gamma": "gamma", "bias": "beta", "beta": "beta"}.get(last)
    return (scope + "/".join(path + [leaf]), False) if leaf else None
  if path[-1] in _TABLES and last == "weight":
    return scope + "/".join(path), False
  if path[-1] in _LINEAR_SCOPES and last in ("weight", "bias"):
    return scope + "/".join(path + ["kernel" if last == "weight" else "bias"]), last == "weight"
  return None


class _SafetensorsFiles:
  """Lazy access to the tensors of one or several (sharded) safetensors files."""

  def __init__(self, path):
    if os.path.isdir(path):
      index = os.path.join(path, INDEX_NAME)
      if os.path.exists(index):
        with open(index, encoding="utf-8") as f:
          shards = sorted(set(json.load(f)["weight_map"].values()))
        files = [os.path.join(path, s) for s in shards]
      else:
        files = [os.path.join(path, WEIGHTS_NAME)]
    else:
      files = [path]
    self.where, self.handles = {}, []
    for file in files:
      try:
        handle = safe_open(file, framework="np")
      except FileNotFoundError:
        raise CheckpointNotFoundError(f"no HuggingFace weights at {file!r}") from None
      except Exception as e:  # safetensors raises its own error type on bad headers.
        raise CheckpointError(f"cannot read safetensors file {file!r}: {e}") from None
      self.handles.append(handle)
      for key in handle.keys():
        self.where[key] = handle

  def shape(self, key):
    return list(self.where[key].get_slice(key).get_shape())

  def get(self, key):
    return self.where[key].get_tensor(key)


def load_huggingface_checkpoint(model, path):
  """Loads HF BERT weights (directory or .safetensors file) into `model`.

  Strictness and the report are those of `assign_named_arrays`. The tied
  `cls.predictions.decoder.weight`, when present, must equal the word embeddings.
  """
  path = os.fspath(path)
  files = _SafetensorsFiles(path)
  translated, unmapped = {}, []
  for key in files.where:
    mapped = google_name(key)
    if mapped is None:
      unmapped.append(key)
    else:
      translated[mapped[0]] = (key, mapped[1])

  shapes = {}
  for name, (key, transpose) in translated.items():
    shape = files.shape(key)
    shapes[name] = shape[::-1] if transpose else shape

  def get_array(name):
    key, transpose = translated[name]
    value = files.get(key)
    return np.ascontiguousarray(value.T) if transpose else value

  decoders = [k for k in unmapped if k.endswith("cls.predictions.decoder.weight")]
  if decoders and "bert/embeddings/word_embeddings" in translated:
    if not np.array_equal(files.get(decoders[0]), get_array("bert/embeddings/word_embeddings")):
      raise CheckpointError(f"{path}: {decoders[0]} differs from the word embeddings; BERT's "
                            "masked-LM decoder must be tied to them")
  report = assign_named_arrays(model, shapes, get_array, path)
  report.ignored = sorted([translated[n][0] for n in report.ignored] + unmapped)  # HF names
  return report
