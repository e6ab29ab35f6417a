"""The explicit map between Google's TF1 variable names and our Keras variables.

Every format we read or write is translated to these names: they are the
canonical names of a BERT model's weights.
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


def model_variables(model):
  """Google name -> variable for every weight of `model`: encoder and heads."""
  variables = dict(encoder_variables(find_encoder(model)))
  for head in head_variables(model).values():
    variables.update(head)
  return variables


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
