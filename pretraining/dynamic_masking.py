"""Dynamic masking: Google's masked-LM choice made in the tf.data pipeline, anew at each epoch.

For records written with `create_pretraining_data.py --dynamic_masking`
(unmasked `input_ids`, no masked-LM features). The rules are those of
`pretraining_data.masking`, which writes the static records: candidates are
the real tokens but [CLS] and [SEP] (with whole-word masking a "##" piece
joins the candidate before it); they are taken in random order while they fit
into `num_to_predict = min(max_predictions_per_seq, max(1, round(n *
masked_lm_prob)))` (n counts [CLS] and [SEP], as Google's does); each chosen
token becomes [MASK] (80%), a random vocabulary id (10%) or stays (10%).
Randomness is stateless, keyed by the seed, the input pipeline and the batch's
index in the stream: a batch index never repeats, so every epoch draws new
masks, and the same seed draws the same ones.
"""

import tensorflow as tf

from tokenization.vocab import MASK_TOKEN, check_special_tokens, load_vocab


class DynamicMasker:
  """Adds `masked_lm_positions`, `masked_lm_ids`, `masked_lm_weights` to a parsed batch."""

  def __init__(self, vocab_file, max_predictions_per_seq, masked_lm_prob=0.15,
               do_whole_word_mask=False):
    vocab = list(load_vocab(vocab_file))
    ids = {token: i for i, token in enumerate(vocab)}
    check_special_tokens(ids, vocab_file, ("[CLS]", "[SEP]", MASK_TOKEN))
    self.cls_id, self.sep_id, self.mask_id = ids["[CLS]"], ids["[SEP]"], ids["[MASK]"]
    self.vocab_size = len(vocab)
    self.max_predictions_per_seq = max_predictions_per_seq
    self.masked_lm_prob = masked_lm_prob
    self.is_continuation = (tf.constant([t.startswith("##") for t in vocab])
                            if do_whole_word_mask else None)

  def __call__(self, features, seed):
    """Masks one batch; `seed` is a stateless seed, int64 [2]."""
    ids, input_mask = features["input_ids"], features["input_mask"]  # [B, L] int32
    batch, seq_len = tf.shape(ids)[0], tf.shape(ids)[1]
    order_seed, kind_seed, token_seed = tf.unstack(
        tf.random.experimental.stateless_split(seed, 3))
    pos = tf.range(seq_len)[None, :]  # [1, L]
    cand = (input_mask > 0) & (ids != self.cls_id) & (ids != self.sep_id)  # [B, L]
    # tf.round, like Python's round(), rounds half to even.
    num_tokens = tf.cast(tf.reduce_sum(input_mask, axis=1), tf.float32)
    num_to_predict = tf.minimum(self.max_predictions_per_seq, tf.maximum(
        1, tf.cast(tf.round(num_tokens * self.masked_lm_prob), tf.int32)))  # [B]
    starts = cand
    if self.is_continuation is not None:
      # Google joins a "##" piece to the candidate before it, even across the middle [SEP].
      starts = cand & ~(tf.gather(self.is_continuation, ids) & (pos > 1))
    group = tf.cumsum(tf.cast(starts, tf.int32), axis=1) - 1  # [B, L] group of each position
    num_groups = tf.reduce_sum(tf.cast(starts, tf.int32), axis=1)  # [B]
    rows = tf.broadcast_to(tf.range(batch)[:, None], [batch, seq_len])
    # [B * L]: row * L + group; non-candidates go to one extra bin, dropped below.
    flat_group = tf.reshape(tf.where(cand, rows * seq_len + group, batch * seq_len), [-1])
    group_len = tf.reshape(tf.math.unsorted_segment_sum(  # [B, L]: pieces per group index
        tf.ones_like(flat_group), flat_group, batch * seq_len + 1)[:-1], [batch, seq_len])
    # Groups in a random order, the real ones first.
    keys = tf.random.stateless_uniform([batch, seq_len], order_seed)
    keys = tf.where(pos < num_groups[:, None], keys, 2.0)
    order = tf.argsort(keys, axis=1, stable=True)  # [B, L]: group at each rank
    len_in_order = tf.gather(group_len, order, batch_dims=1)  # [B, L]

    def take_if_it_fits(state, lengths):  # lengths [B]: the groups at one rank
      count, _ = state
      fits = (lengths > 0) & (count + lengths <= num_to_predict)
      return count + tf.where(fits, lengths, 0), fits

    _, taken = tf.scan(take_if_it_fits, tf.transpose(len_in_order),
                       initializer=(tf.zeros([batch], tf.int32), tf.zeros([batch], tf.bool)))
    rank_of_group = tf.argsort(order, axis=1)  # [B, L]
    group_taken = tf.gather(tf.transpose(taken), rank_of_group, batch_dims=1)  # by group index
    chosen = cand & tf.gather(group_taken, tf.maximum(group, 0), batch_dims=1)  # [B, L]

    kind = tf.random.stateless_uniform([batch, seq_len], kind_seed)
    random_ids = tf.random.stateless_uniform([batch, seq_len], token_seed, 0, self.vocab_size,
                                             dtype=tf.int32)
    masked_ids = tf.where(chosen & (kind < 0.8), self.mask_id,
                          tf.where(chosen & (kind >= 0.9), random_ids, ids))
    positions = tf.ragged.boolean_mask(tf.broadcast_to(pos, [batch, seq_len]), chosen)
    shape = [None, self.max_predictions_per_seq]
    out = dict(features, input_ids=masked_ids)
    out["masked_lm_positions"] = positions.to_tensor(0, shape=shape)  # ascending, 0-padded
    out["masked_lm_ids"] = tf.ragged.boolean_mask(ids, chosen).to_tensor(0, shape=shape)
    out["masked_lm_weights"] = tf.ones_like(positions, tf.float32).to_tensor(0.0, shape=shape)
    return out


def masked_dataset_fn(dataset_fn, masker, seed):
  """Wraps a `dataset_fn(input_context)` of parsed batches so each batch is masked by `masker`."""
  def masked(context):
    pipeline_seed = tf.random.experimental.stateless_fold_in(
        tf.constant([seed, 0], tf.int64), context.input_pipeline_id)

    def mask(index, features):
      return masker(features, tf.random.experimental.stateless_fold_in(pipeline_seed, index))
    return (dataset_fn(context).enumerate().map(mask, num_parallel_calls=tf.data.AUTOTUNE)
            .prefetch(tf.data.AUTOTUNE))
  return masked
