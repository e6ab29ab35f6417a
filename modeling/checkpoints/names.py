"""The explicit maps of Google's TF1 variable names to our Keras variables and to HF's names.

Every format we read or write is translated to these names: they are the
canonical names of a BERT model's weights. `to_huggingface` and
`from_huggingface` are the one map between them and HuggingFace transformers'
PyTorch names, used by the reader and the writer of safetensors files.
"""

import re

ENCODER_PREFIX = "bert/"
# Heads: our layer name -> what reports call it.
HEAD_LABELS = {
    "cls_predictions": "masked-LM head",
    "cls_seq_relationship": "next-sentence head",
    "classifier": "classifier output layer",
    "cls_squad": "SQuAD span layer",
}
POOLER_PREFIX = "bert/pooler/"
POOLER_LABEL = "pooler (no head uses it)"
_LAYER_RE = re.compile(r"^bert/encoder/layer_(\d+)/")


def find_encoder(model):
  """The encoder built by `build_encoder`: the model itself or its layer `bert`."""
  names = {layer.name for layer in model.layers}
  if "embeddings" in names:
    return model
  if "bert" in names:
    return model.get_layer("bert")
  raise ValueError(f"model {model.name!r} is not a BERT model built by modeling "
                   "(it has neither an `embeddings` nor a `bert` layer)")


def _dense(scope, dense):
  return {f"{scope}/kernel": dense.kernel, f"{scope}/bias": dense.bias}


def _layer_norm(scope, norm):
  return {f"{scope}/gamma": norm.gamma, f"{scope}/beta": norm.beta}


def encoder_variables(encoder):
  """Google name -> variable for the encoder (embeddings, layers, pooler)."""
  emb = encoder.get_layer("embeddings")
  names = {
      "bert/embeddings/word_embeddings": emb.word_embeddings,
      "bert/embeddings/token_type_embeddings": emb.token_type_embeddings,
      "bert/embeddings/position_embeddings": emb.position_embeddings,
  }
  names.update(_layer_norm("bert/embeddings/LayerNorm", emb.layer_norm))
  for i in range(num_layers(encoder)):
    layer = encoder.get_layer(f"layer_{i}")
    scope = f"bert/encoder/layer_{i}"
    att = layer.attention
    for part in ("query", "key", "value"):
      names.update(_dense(f"{scope}/attention/self/{part}", getattr(att, part)))
    names.update(_dense(f"{scope}/attention/output/dense", att.output_dense))
    names.update(_layer_norm(f"{scope}/attention/output/LayerNorm", layer.attention_layer_norm))
    names.update(_dense(f"{scope}/intermediate/dense", layer.intermediate))
    names.update(_dense(f"{scope}/output/dense", layer.output_dense))
    names.update(_layer_norm(f"{scope}/output/LayerNorm", layer.output_layer_norm))
  names.update(_dense("bert/pooler/dense", encoder.get_layer("pooler")))
  return names


def head_variables(model):
  """Our head layer name -> {Google name: variable} for the heads `model` has."""
  present = {layer.name: layer for layer in model.layers}
  heads = {}
  if "cls_predictions" in present:
    head = present["cls_predictions"]
    names = _dense("cls/predictions/transform/dense", head.transform_dense)
    names.update(_layer_norm("cls/predictions/transform/LayerNorm", head.transform_layer_norm))
    names["cls/predictions/output_bias"] = head.output_bias
    heads["cls_predictions"] = names
  if "cls_seq_relationship" in present:
    head = present["cls_seq_relationship"]
    heads["cls_seq_relationship"] = {"cls/seq_relationship/output_weights": head.output_weights,
                                     "cls/seq_relationship/output_bias": head.output_bias}
  if "cls_squad" in present:
    head = present["cls_squad"]
    heads["cls_squad"] = {"cls/squad/output_weights": head.output_weights,
                          "cls/squad/output_bias": head.output_bias}
  if "classifier" in present:
    head = present["classifier"]
    heads["classifier"] = {"output_weights": head.output_weights,
                           "output_bias": head.output_bias}
  return heads


# A head's Google scope (or, for run_classifier's, its names) -> our head layer.
_HEAD_SCOPES = {"cls/predictions": "cls_predictions", "cls/seq_relationship": "cls_seq_relationship",
                "cls/squad": "cls_squad", "output_weights": "classifier",
                "output_bias": "classifier"}


def head_of(name):
  """Our head layer (a key of HEAD_LABELS) for a Google head weight name; else None."""
  if is_optimizer_variable(name):
    return None
  parts = name.split("/")
  return _HEAD_SCOPES.get("/".join(parts[:2]) if parts[0] == "cls" else parts[0])


def pooler_is_optional(heads, shapes):
  """Whether a checkpoint (Google name -> shape) may lack the pooler for a model with `heads`
  (`head_variables`): a SQuAD model, or a pre-training model reading no next-sentence head
  (whose pooler is then unused, as in HF's BertForQuestionAnswering and BertForMaskedLM)."""
  if "cls_squad" in heads:
    return True
  nsp = heads.get("cls_seq_relationship")
  return nsp is not None and not any(name in shapes for name in nsp)


def model_variables(model):
  """Google name -> variable for every weight of `model`: encoder and heads."""
  variables = dict(encoder_variables(find_encoder(model)))
  for head in head_variables(model).values():
    variables.update(head)
  return variables


# --- HuggingFace's names ------------------------------------------------------------------------

# What HF puts before every encoder weight of a model with a head (BertModel has none).
HF_ENCODER_PREFIX = "bert."
# Head weights: Google name -> HF name (same layout: HF's heads keep [out, in] as Google's do).
_HF_HEADS = {
    "cls/predictions/output_bias": "cls.predictions.bias",
    "cls/seq_relationship/output_weights": "cls.seq_relationship.weight",
    "cls/seq_relationship/output_bias": "cls.seq_relationship.bias",
    "output_weights": "classifier.weight",
    "output_bias": "classifier.bias",
    "cls/squad/output_weights": "qa_outputs.weight",
    "cls/squad/output_bias": "qa_outputs.bias",
}
_GOOGLE_HEADS = {hf: google for google, hf in _HF_HEADS.items()}
# Google scope -> HF scope of the weights named by path ("/" in Google's names, "." in HF's).
_HF_SCOPES = {"bert/": "", "cls/predictions/transform/": "cls.predictions.transform."}
# Leaves: Google's -> (HF's, transposed). Dense kernels are [in, out]; HF's Linear weights [out, in].
_DENSE_LEAVES = {"kernel": ("weight", True), "bias": ("bias", False)}
_NORM_LEAVES = {"gamma": ("weight", False), "beta": ("bias", False)}
_DENSE_SCOPES = ("query", "key", "value", "dense")
_TABLES = ("word_embeddings", "position_embeddings", "token_type_embeddings")
# Names older transformers versions wrote, read as today's.
_HF_ALIASES = {"cls.predictions.decoder.bias": "cls.predictions.bias"}
_HF_OLD_NORM_LEAVES = {"gamma": "weight", "beta": "bias"}


def to_huggingface(name):
  """(HF name, transposed?) for a Google weight name; None for a name that is no model weight.

  Encoder names come without HF's "bert." prefix (`HF_ENCODER_PREFIX`), as
  BertModel names them.
  """
  if name in _HF_HEADS:
    return _HF_HEADS[name], False
  scope = next((s for s in _HF_SCOPES if name.startswith(s)), None)
  if scope is None:
    return None
  *path, leaf = name[len(scope):].split("/")
  if not path or (scope == ENCODER_PREFIX and path[0] not in ("embeddings", "encoder", "pooler")):
    return None
  hf_path = [re.sub(r"^layer_(\d+)$", r"layer.\1", part) for part in path]
  if path == ["embeddings"] and leaf in _TABLES:
    return _HF_SCOPES[scope] + ".".join(hf_path + [leaf, "weight"]), False
  leaves = _NORM_LEAVES if path[-1] == "LayerNorm" else (
      _DENSE_LEAVES if path[-1] in _DENSE_SCOPES else {})
  if leaf not in leaves:
    return None
  hf_leaf, transposed = leaves[leaf]
  return _HF_SCOPES[scope] + ".".join(hf_path + [hf_leaf]), transposed


def from_huggingface(hf_name):
  """(Google name, transposed?) for an HF weight name, or None if it is no model weight.

  `to_huggingface` read backwards: names with or without the "bert." prefix,
  and the names older transformers versions wrote (LayerNorm `gamma`/`beta`,
  `cls.predictions.decoder.bias`).
  """
  name = hf_name[len(HF_ENCODER_PREFIX):] if hf_name.startswith(HF_ENCODER_PREFIX) else hf_name
  name = _HF_ALIASES.get(name, name)
  name = re.sub(r"\.LayerNorm\.(gamma|beta)$",
                lambda m: ".LayerNorm." + _HF_OLD_NORM_LEAVES[m.group(1)], name)
  if name in _GOOGLE_HEADS:
    return _GOOGLE_HEADS[name], False
  for google in _google_candidates(name):
    mapped = to_huggingface(google)
    if mapped is not None and mapped[0] == name:
      return google, mapped[1]
  return None


def _google_candidates(hf_name):
  """The Google names `hf_name` may stand for; `from_huggingface` keeps the one that maps back."""
  for scope, hf_scope in _HF_SCOPES.items():
    if hf_name.startswith(hf_scope):
      *path, _ = re.sub(r"(^|\.)layer\.(\d+)\.", r"\1layer_\2.",
                        hf_name[len(hf_scope):]).split(".")
      yield scope + "/".join(path)  # an embedding table (HF: <table>.weight)
      for leaf in (*_DENSE_LEAVES, *_NORM_LEAVES):
        yield scope + "/".join(path + [leaf])


def num_layers(encoder):
  return sum(1 for layer in encoder.layers if re.fullmatch(r"layer_\d+", layer.name))


def layer_index(name):
  """N for a `bert/encoder/layer_N/...` name, else None."""
  m = _LAYER_RE.match(name)
  return int(m.group(1)) if m else None


def is_optimizer_variable(name):
  """Adam slots, global_step and other training state Google's checkpoints carry."""
  last = name.rsplit("/", 1)[-1]
  return (last in ("adam_m", "adam_v", "Adam", "Adam_1", "Momentum", "ExponentialMovingAverage")
          or name in ("global_step", "beta1_power", "beta2_power") or name.startswith("_"))
