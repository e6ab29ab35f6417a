"""Google's `[CLS] A [SEP] B [SEP]` layout for token lists (the Python twin of in_graph.pack)."""


def truncate_seq_pair(tokens_a, tokens_b, max_length):
  """Pops tokens, in place, from the longer list (tokens_b on ties) until both fit."""
  while len(tokens_a) + len(tokens_b) > max_length:
    if len(tokens_a) > len(tokens_b):
      tokens_a.pop()
    else:
      tokens_b.pop()


def pack_tokens(tokenizer, text_a, text_b, max_seq_length):
  """Tokenizes and packs one example as Google's run_classifier and extract_features do.

  Returns (tokens, input_ids, input_mask, segment_ids): the tokens up to the last
  [SEP], the other three zero-padded to max_seq_length, segment 1 on B and its
  [SEP]. A text_b that tokenizes to nothing gives a single segment.
  """
  tokens_a = tokenizer.tokenize(text_a)
  tokens_b = tokenizer.tokenize(text_b) if text_b else None
  if tokens_b:
    truncate_seq_pair(tokens_a, tokens_b, max_seq_length - 3)  # [CLS], [SEP], [SEP]
  else:
    tokens_a = tokens_a[:max_seq_length - 2]  # [CLS], [SEP]
  tokens = ["[CLS]"] + tokens_a + ["[SEP]"]
  segment_ids = [0] * len(tokens)
  if tokens_b:
    tokens += tokens_b + ["[SEP]"]
    segment_ids += [1] * (len(tokens_b) + 1)
  input_ids = tokenizer.convert_tokens_to_ids(tokens)
  padding = [0] * (max_seq_length - len(input_ids))
  return tokens, input_ids + padding, [1] * len(input_ids) + padding, segment_ids + padding
