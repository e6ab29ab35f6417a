"""Parameter accounting: per-component counts from a config (no allocation) or a model.

CLI: `python -m modeling.params --preset base` or `--bert_config_file=...`.
"""

import collections

import numpy as np


def count_parameters(config, heads=False):
  """Component -> parameter count, computed from the config's shapes.

  Components: `embeddings`, `layer` (each of the `num_hidden_layers` layers),
  `encoder_layers` (all of them), `pooler`, `encoder` (embeddings + layers +
  pooler); with `heads`, also `masked_lm` (its decoder is tied to the word
  embeddings, so it adds the transform and the output bias) and
  `next_sentence`, and `total`.
  """
  v, h, i = config.vocab_size, config.hidden_size, config.intermediate_size
  counts = collections.OrderedDict()
  counts["embeddings"] = (v + config.max_position_embeddings + config.type_vocab_size) * h + 2 * h
  # q, k, v and attention output (h*h + h each), 2 LayerNorms, intermediate, output.
  counts["layer"] = 4 * (h * h + h) + 2 * 2 * h + (h * i + i) + (i * h + h)
  counts["encoder_layers"] = counts["layer"] * config.num_hidden_layers
  counts["pooler"] = h * h + h
  counts["encoder"] = counts["embeddings"] + counts["encoder_layers"] + counts["pooler"]
  if heads:
    counts["masked_lm"] = (h * h + h) + 2 * h + v
    counts["next_sentence"] = 2 * h + 2
  counts["total"] = sum(counts[k] for k in ("encoder", "masked_lm", "next_sentence")
                        if k in counts)
  return counts


def count_model_parameters(model):
  """The same breakdown counted from a built model's variables (tied weights once)."""
  from modeling.checkpoints import names as names_lib  # pylint: disable=g-import-not-at-top
  encoder = names_lib.find_encoder(model)

  def size(variables):
    return int(sum(np.prod(var.shape) for var in variables))

  named = names_lib.encoder_variables(encoder)
  counts = collections.OrderedDict()
  counts["embeddings"] = size(v for n, v in named.items() if n.startswith("bert/embeddings/"))
  layers = [size(v for n, v in named.items() if n.startswith(f"bert/encoder/layer_{k}/"))
            for k in range(names_lib.num_layers(encoder))]
  if len(set(layers)) > 1:
    raise AssertionError(f"layers differ in size: {layers}")
  counts["layer"] = layers[0] if layers else 0
  counts["encoder_layers"] = sum(layers)
  counts["pooler"] = size(v for n, v in named.items() if n.startswith("bert/pooler/"))
  counts["encoder"] = counts["embeddings"] + counts["encoder_layers"] + counts["pooler"]
  labels = {"cls_predictions": "masked_lm", "cls_seq_relationship": "next_sentence",
            "classifier": "classifier", "cls_squad": "squad_span"}
  for head, variables in names_lib.head_variables(model).items():
    counts[labels[head]] = size(variables.values())
  unique = {id(v): v for v in model.weights}
  counts["total"] = size(unique.values())
  return counts


def forward_flops(config, seq_length):
  """Matmul FLOPs of one example's forward pass through the encoder (dense layers + attention)."""
  h, i, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
  # Per token: q, k, v, output (4 h*h) and the two feed-forward matmuls (2 h*i), then the
  # scores and the weighted sum over seq_length keys (2 seq*h).
  per_token = 2 * (4 * h * h + 2 * h * i) + 2 * 2 * seq_length * h
  return layers * seq_length * per_token + 2 * h * h  # + the pooler


def format_counts(counts, num_layers):
  """A readable table of a breakdown."""
  lines = []
  for name, value in counts.items():
    label = f"layer (each of {num_layers})" if name == "layer" else name
    lines.append(f"{label:<24}{value:>15,}")
  return "\n".join(lines)


def main(argv=None):
  """Prints the breakdown for a preset or a bert_config.json."""
  import argparse  # pylint: disable=g-import-not-at-top
  from modeling.config import PRESETS, BertConfig  # pylint: disable=g-import-not-at-top
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  group = parser.add_mutually_exclusive_group(required=True)
  group.add_argument("--preset", choices=sorted(PRESETS))
  group.add_argument("--bert_config_file")
  parser.add_argument("--vocab_size", type=int, default=30522, help="with --preset")
  parser.add_argument("--heads", action="store_true", help="include the pre-training heads")
  args = parser.parse_args(argv)
  if args.preset:
    config = BertConfig.preset(args.preset, vocab_size=args.vocab_size)
  else:
    config = BertConfig.from_json_file(args.bert_config_file)
  print(f"L={config.num_hidden_layers} H={config.hidden_size} A={config.num_attention_heads} "
        f"I={config.intermediate_size} V={config.vocab_size}")
  print(format_counts(count_parameters(config, heads=args.heads), config.num_hidden_layers))


if __name__ == "__main__":
  main()
