"""Per-token features from chosen encoder layers, in Google's extract_features JSON format.

Input: one example per line, `text_a` or `text_a ||| text_b`. Output: one JSON
object per line, `{"linex_index": i, "features": [{"token": t, "layers":
[{"index": l, "values": [...]}, ...]}, ...]}`, values rounded to 6 decimals.
"""

import collections
import dataclasses
import json
import re

from absl import logging
import numpy as np
import tensorflow as tf

from cli import FlagError

from fileio import InputError, atomic_output, check_outputs, missing_file, utf8_lines
from modeling.checkpoints.auto import load_checkpoint
from modeling.encoder import build_encoder
from tokenization.packing import pack_tokens
from training.runtime import check_positive

_PAIR_RE = re.compile(r"^(.*) \|\|\| (.*)$")


@dataclasses.dataclass
class InputExample:
  unique_id: int
  text_a: str
  text_b: str = None


@dataclasses.dataclass
class InputFeatures:
  unique_id: int
  tokens: list
  input_ids: list
  input_mask: list
  segment_ids: list


def read_examples(input_file):
  """One example per line; `a ||| b` is a pair. Ids count from 0, as Google's.

  Raises InputError for a missing or empty input (Google's writes an empty output) and for a
  line that is not valid UTF-8 (Google's drops its bad bytes).
  """
  problem = missing_file(input_file)
  if problem:
    raise InputError(f"--input_file {input_file!r}: {problem}")
  examples = []
  for line_no, line in utf8_lines(input_file):
    text = line.strip()
    m = _PAIR_RE.match(text)
    examples.append(InputExample(line_no - 1, m.group(1), m.group(2)) if m
                    else InputExample(line_no - 1, text))
  if not examples:
    raise InputError(f"--input_file {input_file!r} is empty: no line to extract features for")
  return examples


def convert_examples_to_features(examples, seq_length, tokenizer):
  """`[CLS] a [SEP] (b [SEP])`, segment 1 on b, ids 0-padded to seq_length."""
  return [InputFeatures(example.unique_id,
                        *pack_tokens(tokenizer, example.text_a, example.text_b, seq_length))
          for example in examples]


def parse_layers(layers, num_layers):
  """'-1,-2' -> [-1, -2], checked against the model's number of layers."""
  try:
    indexes = [int(x) for x in layers.split(",")]
  except ValueError:
    raise FlagError(f"--layers must be comma-separated integers, got {layers!r}") from None
  bad = [i for i in indexes if not -num_layers <= i < num_layers]
  if bad:
    raise FlagError(f"--layers {bad} out of range for a model with {num_layers} layers")
  return indexes


def _feature_json(feature, layer_outputs, layer_indexes):
  """Google's output object for one example; layer_outputs: list of [seq, hidden]."""
  tokens = []
  for i, token in enumerate(feature.tokens):
    layers = [collections.OrderedDict([("index", index),
                                       ("values", [round(float(x), 6) for x in output[i]])])
              for index, output in zip(layer_indexes, layer_outputs)]
    tokens.append(collections.OrderedDict([("token", token), ("layers", layers)]))
  return json.dumps(collections.OrderedDict([("linex_index", feature.unique_id),
                                             ("features", tokens)]))


def extract_features(config, init_checkpoint, tokenizer, input_file, output_file, layers,
                     max_seq_length=128, batch_size=32, overwrite=False):
  """Runs the encoder over `input_file` and writes the JSON lines atomically.

  An existing `output_file` is replaced only with `overwrite`, an input never.
  Returns the number of examples written.
  """
  check_outputs([output_file], overwrite,
                {"--input_file": input_file, "--vocab_file": tokenizer.vocab_file})
  check_positive("batch_size", batch_size)
  config.check_seq_length(max_seq_length)
  layer_indexes = parse_layers(layers, config.num_hidden_layers)
  examples = read_examples(input_file)
  features = convert_examples_to_features(examples, max_seq_length, tokenizer)
  encoder = build_encoder(config, seq_length=max_seq_length, outputs="all_layers")
  if init_checkpoint:
    logging.info(load_checkpoint(encoder, init_checkpoint).summary())

  @tf.function
  def run(batch):
    outputs = encoder(batch, training=False)["encoder_outputs"]
    return [outputs[i] for i in layer_indexes]

  with atomic_output(output_file, overwrite=overwrite) as writer:
    for start in range(0, len(features), batch_size):
      chunk = features[start:start + batch_size]
      batch = {name: np.array([getattr(f, name) for f in chunk], np.int32)
               for name in ("input_ids", "input_mask", "segment_ids")}
      outputs = [o.numpy() for o in run(batch)]
      for k, feature in enumerate(chunk):
        writer.write(_feature_json(feature, [o[k] for o in outputs], layer_indexes) + "\n")
      logging.info("extracted %d / %d examples", start + len(chunk), len(features))
  return len(features)
