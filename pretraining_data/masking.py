"""Model inputs from instance spans, and Google's masked-LM choice, vectorised over instances.

Per instance, Google shuffles the candidate positions (every token but [CLS]
and [SEP]; with whole-word masking, a word's `##` pieces join the candidate
before them), takes candidates in that order while they fit into
`num_to_predict = min(max_predictions_per_seq, max(1, round(n * masked_lm_prob)))`,
and replaces each chosen token by [MASK] (80%), a random vocabulary token (10%)
or itself (10%). Here the shuffle is a random key per candidate and the greedy
fill runs column by column over all instances at once. Single pieces (no
whole-word masking) need no sort: the chosen ones are those whose keys are
among their instance's num_to_predict smallest.
"""

import dataclasses

import numpy as np


@dataclasses.dataclass
class ModelInputs:
  """Padded arrays for n instances: [n, max_seq_length] int32 unless noted."""
  input_ids: np.ndarray
  lengths: np.ndarray  # [n] tokens incl. [CLS] and both [SEP]
  a_lengths: np.ndarray  # [n] tokens of segment A


def build_inputs(ids, spans, max_seq_length, cls_id, sep_id):
  """`[CLS] A [SEP] B [SEP]` + zero padding, gathered from the chunk's flat `ids`."""
  pos = np.arange(max_seq_length)[None, :]  # [1, L]
  la = spans.a_len[:, None]  # [n, 1]
  lengths = spans.a_len + spans.b_len + 3
  # Position p reads ids[a_start + p - 1] up to A's end, ids[b_start + p - a_len - 2] after
  # it; [CLS], both [SEP] and the padding are set below.
  src = np.where(pos <= la, spans.a_start[:, None] - 1, spans.b_start[:, None] - la - 2) + pos
  input_ids = np.take(np.asarray(ids), src, mode="clip").astype(np.int32, copy=False)  # [n, L]
  input_ids[pos >= lengths[:, None]] = 0
  rows = np.arange(len(la))
  input_ids[:, 0] = cls_id
  input_ids[rows, spans.a_len + 1] = sep_id
  input_ids[rows, lengths - 1] = sep_id
  return ModelInputs(input_ids, lengths, spans.a_len.copy())


@dataclasses.dataclass
class MaskedInputs:
  """Masked `input_ids` [n, L] and the predictions, [n, max_predictions_per_seq] each,
  positions sorted and zero-padded; `num_predictions` [n]."""
  input_ids: np.ndarray
  positions: np.ndarray
  label_ids: np.ndarray
  num_predictions: np.ndarray
  num_masked: int  # replaced by [MASK]
  num_random: int  # replaced by a random token
  num_kept: int  # left unchanged


def mask_inputs(inputs, masked_lm_prob, max_predictions_per_seq, vocab_size, mask_id,
                is_continuation, rng):
  """Chooses and applies masked-LM predictions; `rng` is a numpy Generator.

  `is_continuation` is a [vocab_size] bool array (token starts with "##") for
  whole-word masking, or None to mask single pieces.
  """
  ids = inputs.input_ids
  n = len(ids)
  # Python's round() and np.rint both round half to even.
  num_to_predict = np.minimum(
      max_predictions_per_seq, np.maximum(1, np.rint(inputs.lengths * masked_lm_prob))
  ).astype(np.int64)
  keys = rng.random(ids.shape)  # [n, L] a random key per candidate group
  chosen = None
  if is_continuation is None:
    chosen = _chosen_pieces(inputs, num_to_predict, keys)
  if chosen is None:
    chosen = _chosen_groups(inputs, num_to_predict, is_continuation, keys)
  rows, cols = np.nonzero(chosen)  # row-major: positions ascending within each row
  num_predictions = np.bincount(rows, minlength=n)
  slot = np.arange(len(rows)) - (np.cumsum(num_predictions) - num_predictions)[rows]
  positions = np.zeros((n, max_predictions_per_seq), np.int32)
  label_ids = np.zeros((n, max_predictions_per_seq), np.int32)
  positions[rows, slot] = cols
  label_ids[rows, slot] = ids[rows, cols]

  u = rng.random(len(rows))
  to_mask, to_random = u < 0.8, u >= 0.9
  masked = ids.copy()
  masked[rows[to_mask], cols[to_mask]] = mask_id
  masked[rows[to_random], cols[to_random]] = rng.integers(0, vocab_size, int(to_random.sum()))
  n_mask, n_random = int(to_mask.sum()), int(to_random.sum())
  return MaskedInputs(masked, positions, label_ids, num_predictions, n_mask, n_random,
                      len(rows) - n_mask - n_random)


def _chosen_groups(inputs, num_to_predict, is_continuation, keys):
  """Google's choice: [n, L] bool, the positions to predict.

  Candidate groups are taken in the order of their `keys` [n, L] (group g's key
  in column g) while they fit into `num_to_predict` [n].
  """
  ids = inputs.input_ids
  n, seq_len = ids.shape
  pos = np.arange(seq_len)[None, :]  # [1, L]
  lengths = inputs.lengths[:, None]  # [n, 1]
  cand = (pos >= 1) & (pos < lengths - 1) & (pos != inputs.a_lengths[:, None] + 1)
  if is_continuation is None:
    starts = cand
  else:
    # Google joins a "##" piece to the previous candidate, even across the middle [SEP].
    starts = cand & ~(is_continuation[ids] & (pos > 1))
  group = np.cumsum(starts, axis=1) - 1  # [n, L] group of each candidate position
  num_groups = starts.sum(axis=1)
  keys[pos >= num_groups[:, None]] = np.inf
  order = np.argsort(keys, axis=1)  # [n, L] groups in random order, real ones first
  if is_continuation is None:  # groups of one position: the first num_to_predict ones fit
    take = pos < np.minimum(num_to_predict, num_groups)[:, None]
  else:
    rows, cols = np.nonzero(cand)
    group_len = np.bincount(rows * seq_len + group[rows, cols], minlength=n * seq_len).reshape(
        n, seq_len)  # [n, L] by group index
    len_in_order = np.take_along_axis(group_len, order, axis=1)
    count = np.zeros(n, np.int64)
    take = np.zeros((n, seq_len), bool)
    for c in range(int(num_groups.max(initial=0))):
      fits = (len_in_order[:, c] > 0) & (count + len_in_order[:, c] <= num_to_predict)
      take[:, c] = fits
      count += np.where(fits, len_in_order[:, c], 0)
      if (count >= num_to_predict).all():
        break
  chosen_group = np.zeros((n, seq_len), bool)
  np.put_along_axis(chosen_group, order, take, axis=1)
  return cand & np.take_along_axis(chosen_group, np.maximum(group, 0), axis=1)


def _chosen_pieces(inputs, num_to_predict, keys):
  """`_chosen_groups` for single-piece groups, without a full sort or gathers: the
  candidates whose keys are among the num_to_predict smallest of their row.

  None when two keys at a row's threshold are equal (the set would depend on how
  argsort breaks the tie: `_chosen_groups` decides then).
  """
  n, seq_len = keys.shape
  pos = np.arange(seq_len)  # [L]
  num_groups = inputs.lengths - 3  # [n] every position but [CLS] and the two [SEP]
  keys[pos[None, :] >= num_groups[:, None]] = np.inf
  take = np.minimum(num_to_predict, num_groups)  # [n]
  k = int(take.max(initial=0))
  if k == 0:
    return np.zeros((n, seq_len), bool)
  smallest = np.sort(np.partition(keys, k - 1, axis=1)[:, :k], axis=1)  # [n, k]
  threshold = np.where(take > 0, smallest[np.arange(n), np.maximum(take - 1, 0)], -np.inf)
  chosen_group = keys <= threshold[:, None]  # [n, L] by candidate index
  if (np.count_nonzero(chosen_group, axis=1) != take).any():
    return None
  # Candidate g is position g + 1 in segment A (g < a_len), position g + 2 in B.
  a_len = inputs.a_lengths
  chosen = np.zeros((n, seq_len), bool)
  chosen[:, 1:] = chosen_group[:, :-1]
  in_b = pos[None, 2:] >= a_len[:, None] + 2  # [n, L - 2]
  chosen[:, 2:] = np.where(in_b, chosen_group[:, :-2], chosen[:, 2:])
  chosen[np.arange(n), a_len + 1] = False  # the middle [SEP]
  return chosen
