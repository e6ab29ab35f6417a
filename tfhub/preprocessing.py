"""The TF Hub text preprocessing SavedModel: raw strings -> the encoder's inputs.

It follows TF Hub's preprocessor interface for BERT encoders, so code written
for `bert_en_uncased_preprocess` runs on ours unchanged:

  preprocessor(strings [batch])
      -> {"input_word_ids", "input_mask", "input_type_ids"}: int32
         [batch, default_seq_length], one segment per string;
  preprocessor.tokenize(strings [batch])
      -> int32 RaggedTensor [batch, (words), (wordpieces)];
  preprocessor.tokenize.get_special_tokens_dict()
      -> vocab_size, start_of_sequence_id, end_of_segment_id, padding_id,
         mask_id (int32 scalars);
  preprocessor.bert_pack_inputs([segment_a, segment_b?], seq_length=N)
      -> the three inputs at N (default: default_seq_length), from one or
         two tokenized segments of ragged rank 1 or 2.

Tokens and packing are ours (`tokenization.InGraphTokenizer`), so the ids are
Google's `FullTokenizer` ids and pairs are laid out as Google's
run_classifier does. Two choices where TF Hub's preprocessors differ:
  - truncation: Google cuts the longer segment first (`_truncate_seq_pair`),
    TF Hub takes tokens round-robin; for one or two segments both keep exactly
    the same tokens (the tests compare every pair of lengths up to a bound), so
    there is nothing to choose between;
  - an empty second segment: Google packs the row as a single segment
    (`[CLS] A [SEP]`), TF Hub adds an empty segment (`[CLS] A [SEP] [SEP]`);
    we follow Google, so a model fine-tuned by run_classifier sees the inputs
    it was trained on.
"""

import tensorflow as tf

from tokenization.in_graph import InGraphTokenizer

# TF Hub's names for the encoder inputs, and ours (Google's feature names) for the same tensors.
HUB_INPUT_NAMES = {"input_word_ids": "input_ids", "input_mask": "input_mask",
                   "input_type_ids": "segment_ids"}

_STRINGS = tf.TensorSpec([None], tf.string)


def to_hub_names(features):
  """Our {input_ids, input_mask, segment_ids} dict under TF Hub's names."""
  return {hub: features[ours] for hub, ours in HUB_INPUT_NAMES.items()}


class Tokenize(tf.Module):
  """`tokenize`: strings [batch] -> int32 RaggedTensor [batch, (words), (wordpieces)]."""

  def __init__(self, tokenizer, special_tokens):
    super().__init__(name="tokenize")
    self.tokenizer = tokenizer
    self.special_tokens = special_tokens

  @tf.function(input_signature=[_STRINGS])
  def __call__(self, texts):
    return self.tokenizer.tokenize_words(texts)

  @tf.function(input_signature=[])
  def get_special_tokens_dict(self):
    return {name: tf.constant(value, tf.int32) for name, value in self.special_tokens.items()}


class BertPackInputs(tf.Module):
  """`bert_pack_inputs`: 1 or 2 tokenized segments -> the encoder's three inputs."""

  def __init__(self, tokenizer, default_seq_length):
    super().__init__(name="bert_pack_inputs")
    self.tokenizer = tokenizer
    self.default_seq_length = default_seq_length
    # A SavedModel keeps only traced signatures: trace every input form TF Hub's preprocessors
    # accept.
    for ragged_rank in (1, 2):
      for num_segments in (1, 2):
        segments = [tf.RaggedTensorSpec([None] * (ragged_rank + 1), tf.int32)] * num_segments
        self.__call__.get_concrete_function(segments)
        self.__call__.get_concrete_function(segments, tf.TensorSpec([], tf.int32))

  @tf.function
  def __call__(self, inputs, seq_length=None):
    if not 1 <= len(inputs) <= 2:
      raise ValueError(f"bert_pack_inputs takes 1 or 2 segments, got {len(inputs)}")
    # [batch, (words), (pieces)] -> [batch, (pieces)]
    segments = [s.merge_dims(1, 2) if s.ragged_rank == 2 else s for s in inputs]
    length = self.default_seq_length if seq_length is None else seq_length
    return to_hub_names(self.tokenizer.pack(segments[0], segments[1] if len(segments) > 1
                                            else None, length))


class Preprocessing(tf.Module):
  """The preprocessing SavedModel's root: callable on strings, with the two steps above."""

  def __init__(self, vocab_file, do_lower_case, default_seq_length):
    super().__init__(name="bert_preprocessing")
    tokenizer = InGraphTokenizer(vocab_file, do_lower_case)
    special_tokens = {"vocab_size": tokenizer.vocab_size, "start_of_sequence_id": tokenizer.cls_id,
                      "end_of_segment_id": tokenizer.sep_id, "padding_id": 0}
    if tokenizer.mask_id is not None:
      special_tokens["mask_id"] = tokenizer.mask_id
    self.tokenize = Tokenize(tokenizer, special_tokens)
    self.bert_pack_inputs = BertPackInputs(tokenizer, default_seq_length)
    self.vocab_file = tf.saved_model.Asset(vocab_file)
    self.do_lower_case = tf.Variable(do_lower_case, trainable=False)

  @tf.function(input_signature=[_STRINGS])
  def __call__(self, texts):
    return self.bert_pack_inputs([self.tokenize(texts)])
