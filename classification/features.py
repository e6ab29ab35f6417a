"""Examples -> fixed-length features, exactly as Google's `convert_single_example`."""

import dataclasses

from absl import logging

from classification.examples import PaddingInputExample
from classification.processors import DataFormatError
from tokenization.packing import pack_tokens


@dataclasses.dataclass
class InputFeatures:
  """One example as model inputs: [max_seq_length] id lists plus its label."""
  input_ids: list
  input_mask: list
  segment_ids: list
  label_id: int | float
  is_real_example: bool = True


def convert_single_example(ex_index, example, label_list, max_seq_length, tokenizer):
  """`[CLS] A [SEP] (B [SEP])`, zero-padded to max_seq_length.

  `label_list=None` marks a regression task: the label is kept as a float.
  A text_b that tokenizes to nothing gives a single-segment input, as in Google.
  """
  if isinstance(example, PaddingInputExample):
    zeros = [0] * max_seq_length
    return InputFeatures(list(zeros), list(zeros), list(zeros),
                         label_id=0.0 if label_list is None else 0, is_real_example=False)
  tokens, input_ids, input_mask, segment_ids = pack_tokens(
      tokenizer, example.text_a, example.text_b, max_seq_length)
  label_id = _label_id(example, label_list)
  if ex_index < 5:
    logging.info("*** Example ***\nguid: %s\ntokens: %s\ninput_ids: %s\ninput_mask: %s\n"
                 "segment_ids: %s\nlabel: %s (id = %s)", example.guid, " ".join(tokens),
                 " ".join(map(str, input_ids)), " ".join(map(str, input_mask)),
                 " ".join(map(str, segment_ids)), example.label, label_id)
  return InputFeatures(input_ids, input_mask, segment_ids, label_id, is_real_example=True)


def _label_id(example, label_list):
  if label_list is None:
    return float(example.label)
  try:
    return label_list.index(example.label)
  except ValueError:
    raise DataFormatError(f"example {example.guid}: label {example.label!r} is not in the label "
                     f"list {label_list}") from None


def convert_examples_to_features(examples, label_list, max_seq_length, tokenizer):
  """Converts a list of examples; logs progress every 10,000."""
  features = []
  for i, example in enumerate(examples):
    if i % 10000 == 0:
      logging.info("Converting example %d of %d", i, len(examples))
    features.append(convert_single_example(i, example, label_list, max_seq_length, tokenizer))
  return features


def pad_to_batch_multiple(examples, batch_size):
  """Appends PaddingInputExamples until len(examples) is a multiple of batch_size.

  Google pads eval/predict sets this way on TPU, where every batch must be full;
  the padding has is_real_example=0 and its predictions are dropped on output.
  Returns a new list; the caller keeps len(examples) as the real count.
  """
  if batch_size < 1:
    raise ValueError(f"batch_size must be positive, got {batch_size}")
  return list(examples) + [PaddingInputExample() for _ in range(-len(examples) % batch_size)]

