"""HuggingFace BERT weights (`model.safetensors` + `config.json`), read and written without torch.

HF names are translated to Google's (`bert/...`, `cls/...`) and back by the one
map in `names.py`; HF Linear weights are [out, in] and are transposed to
Google's [in, out] kernels. Both the `bert.`-prefixed (BertForPreTraining, ...)
and unprefixed (BertModel) variants are read; the writer names the tensors as
HF's class for the model's heads does (`ARCHITECTURES`). HF's "gelu" is the
exact erf GELU: `load_hf_config` maps it to "gelu_exact", and the writer
writes Google's "gelu" (tanh) as "gelu_new".
"""

import json
import os

import numpy as np
from safetensors import safe_open
import safetensors.numpy

from modeling import activations
from modeling.checkpoints import names as names_lib
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


# HF's model class for the heads a checkpoint holds (our head layers, `names.HEAD_LABELS`).
ARCHITECTURES = {
    frozenset(): "BertModel",
    frozenset({"cls_predictions", "cls_seq_relationship"}): "BertForPreTraining",
    frozenset({"cls_predictions"}): "BertForMaskedLM",
    frozenset({"cls_seq_relationship"}): "BertForNextSentencePrediction",
    frozenset({"classifier"}): "BertForSequenceClassification",
    frozenset({"cls_squad"}): "BertForQuestionAnswering",
}
# The classes built without BERT's pooler (HF's add_pooling_layer=False): none is written.
_WITHOUT_POOLER = ("BertForMaskedLM", "BertForQuestionAnswering")
# What transformers checks in a safetensors header before it loads the file into PyTorch.
_METADATA = {"format": "pt"}


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


def config_to_dict(config, architecture, pad_token_id=0, labels=None, problem_type=None):
  """HF's `config.json` values for a `BertConfig` and one of ARCHITECTURES' classes.

  hidden_act in HF's meaning (Google's "gelu", the tanh form, is "gelu_new");
  labels: the classifier's label names in id order (id2label / label2id);
  problem_type: HF's "regression" or "single_label_classification".
  """
  values = {"architectures": [architecture], "model_type": "bert"}
  values.update({key: getattr(config, key) for key in _HF_DEFAULTS})
  values.update(hidden_act=activations.to_huggingface_name(config.hidden_act),
                layer_norm_eps=1e-12, position_embedding_type="absolute",
                pad_token_id=pad_token_id, tie_word_embeddings=True, dtype="float32")
  if labels is not None:
    values["id2label"] = {str(i): label for i, label in enumerate(labels)}
    values["label2id"] = {label: i for i, label in enumerate(labels)}
  if problem_type:
    values["problem_type"] = problem_type
  return values


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


def _translate(files):
  """({Google name: (HF key, transposed?)}, [HF keys that are no model weight])."""
  translated, unmapped = {}, []
  for key in files.where:
    mapped = names_lib.from_huggingface(key)
    if mapped is None:
      unmapped.append(key)
    else:
      translated[mapped[0]] = (key, mapped[1])
  return translated, unmapped


def _shapes(files, translated):
  """{Google name: shape in Google's layout}."""
  shapes = {}
  for name, (key, transposed) in translated.items():
    shape = files.shape(key)
    shapes[name] = shape[::-1] if transposed else shape
  return shapes


def read_shapes(path):
  """{Google name: shape} of the model weights in HF safetensors (a directory or a file)."""
  files = _SafetensorsFiles(os.fspath(path))
  return _shapes(files, _translate(files)[0])


def load_huggingface_checkpoint(model, path):
  """Loads HF BERT weights (directory or .safetensors file) into `model`.

  Strictness and the report are those of `assign_named_arrays`. The tied
  `cls.predictions.decoder.weight`, when present, must equal the word embeddings.
  """
  path = os.fspath(path)
  files = _SafetensorsFiles(path)
  translated, unmapped = _translate(files)
  shapes = _shapes(files, translated)

  def get_array(name):
    key, transposed = translated[name]
    value = files.get(key)
    return np.ascontiguousarray(value.T) if transposed else value

  decoders = [k for k in unmapped if k.endswith("cls.predictions.decoder.weight")]
  if decoders and "bert/embeddings/word_embeddings" in translated:
    if not np.array_equal(files.get(decoders[0]), get_array("bert/embeddings/word_embeddings")):
      raise CheckpointError(f"{path}: {decoders[0]} differs from the word embeddings; BERT's "
                            "masked-LM decoder must be tied to them")
  report = assign_named_arrays(model, shapes, get_array, path)
  report.ignored = sorted([translated[n][0] for n in report.ignored] + unmapped)  # HF names
  return report


def huggingface_tensors(model, heads):
  """{HF name: float32 array} of `model`'s encoder and `heads` (our head layers), named as
  HF's class for those heads (ARCHITECTURES) names them, Linear weights [out, in].

  As transformers writes them: the tied masked-LM decoder is left out (HF ties
  it to the word embeddings), and so is the pooler of the classes without one.
  """
  architecture = ARCHITECTURES[frozenset(heads)]
  variables = names_lib.encoder_variables(names_lib.find_encoder(model))
  if architecture in _WITHOUT_POOLER:
    variables = {name: var for name, var in variables.items()
                 if not name.startswith(names_lib.POOLER_PREFIX)}
  model_heads = names_lib.head_variables(model)
  for head in heads:
    variables.update(model_heads[head])
  encoder_prefix = names_lib.HF_ENCODER_PREFIX if heads else ""
  tensors = {}
  for name, variable in variables.items():
    hf_name, transposed = names_lib.to_huggingface(name)
    if name.startswith(names_lib.ENCODER_PREFIX):
      hf_name = encoder_prefix + hf_name
    value = np.asarray(variable.numpy(), np.float32)
    tensors[hf_name] = np.ascontiguousarray(value.T) if transposed else value
  return tensors


def safetensors_bytes(tensors):
  """The `model.safetensors` file of {HF name: array}, with the header transformers expects."""
  return safetensors.numpy.save(tensors, metadata=_METADATA)
