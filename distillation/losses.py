"""TinyBERT's distillation losses (Jiao et al. 2020) and MiniLM's attention KL, on tensors.

Every loss leaves padded positions (input_mask == 0) out by default: the means
are over real positions, or real query-key pairs, only. The official TinyBERT
code counts the padding in its MSEs; `padding=INCLUDED` does as it does.
Inputs may be any float dtype; the losses are float32 scalars.
"""

import tensorflow as tf

# How the MSEs treat padded positions: left out (the paper), or counted as the official
# code counts them (every position's hidden state; every query row, with the scores of
# padded keys 0 on both sides, the mean over all S x S pairs).
EXCLUDED, INCLUDED = "excluded", "included"
PADDING = (EXCLUDED, INCLUDED)


def _real(input_mask):
  """float32 [B, S]: 1 at real tokens."""
  return tf.cast(input_mask, tf.float32)


def hidden_mse(projected_student, teacher, input_mask, padding=EXCLUDED):
  """MSE(H_S W, H_T) over the real positions: TinyBERT's embedding and hidden-state losses.

  projected_student [B, S, H_T]: H_S W, the student's states through their learned
  projection (`distillation.model.Projections`); teacher [B, S, H_T]; input_mask
  [B, S]. The mean is over the real positions' n_real * H_T elements (with
  padding=INCLUDED, over all B * S * H_T).
  """
  real = _real(input_mask)
  counted = tf.ones_like(real) if padding == INCLUDED else real
  squared = tf.reduce_sum(tf.square(tf.cast(projected_student, tf.float32) -
                                    tf.cast(teacher, tf.float32)), axis=-1)  # [B, S]
  width = tf.cast(tf.shape(teacher)[-1], tf.float32)
  return tf.reduce_sum(squared * counted) / (tf.reduce_sum(counted) * width)


def attention_score_mse(student_scores, teacher_scores, input_mask, padding=EXCLUDED):
  """TinyBERT's attention loss: MSE of the unnormalised scores, averaged over heads.

  student_scores, teacher_scores [B, N, S, S]: QK^T/sqrt(d) before the padding
  mask (the encoder's `attention_scores`), with the same number of heads N.
  The mean is over the heads and the real (query, key) pairs; with
  padding=INCLUDED, the padded queries' rows count too, padded keys count as a
  difference of 0, and the mean is over all B * N * S * S scores.
  """
  real = _real(input_mask)
  queries = tf.ones_like(real) if padding == INCLUDED else real
  pairs = queries[:, :, tf.newaxis] * real[:, tf.newaxis, :]  # [B, S, S]
  squared = tf.square(tf.cast(student_scores, tf.float32) - tf.cast(teacher_scores, tf.float32))
  heads = tf.cast(tf.shape(squared)[1], tf.float32)
  count = (tf.cast(tf.size(squared), tf.float32) if padding == INCLUDED
           else tf.reduce_sum(pairs) * heads)
  return tf.reduce_sum(squared * pairs[:, tf.newaxis]) / count


def soft_cross_entropy(student_logits, teacher_logits, temperature=1.0):
  """TinyBERT's prediction loss: CE(softmax(z_T / t), softmax(z_S / t)), mean over examples.

  student_logits, teacher_logits [B, C]. No t^2 factor (the paper has none).
  """
  teacher_probs = tf.nn.softmax(tf.cast(teacher_logits, tf.float32) / temperature, axis=-1)
  student_log_probs = tf.nn.log_softmax(tf.cast(student_logits, tf.float32) / temperature,
                                        axis=-1)
  return tf.reduce_mean(-tf.reduce_sum(teacher_probs * student_log_probs, axis=-1))


def attention_kl(student_scores, teacher_scores, input_mask):
  """MiniLM's attention transfer: KL(A_T || A_S) per head and query, for the last layers.

  student_scores, teacher_scores [B, N, S, S] as for `attention_score_mse`; the
  distributions A are their softmax over the real keys (as the model attends).
  The mean is over the heads and the real queries.
  """
  real = _real(input_mask)
  keys = tf.cast(input_mask, tf.bool)[:, tf.newaxis, tf.newaxis, :]  # [B, 1, 1, S]

  def log_probs(scores):  # [B, N, S, S], padded keys at a finite floor, their terms dropped below
    return tf.nn.log_softmax(tf.where(keys, tf.cast(scores, tf.float32), -1e9), axis=-1)
  teacher_log, student_log = log_probs(teacher_scores), log_probs(student_scores)
  terms = tf.where(keys, tf.exp(teacher_log) * (teacher_log - student_log), 0.0)
  per_query = tf.reduce_sum(terms, axis=-1)  # [B, N, S]
  heads = tf.cast(tf.shape(per_query)[1], tf.float32)
  return tf.reduce_sum(per_query * real[:, tf.newaxis]) / (tf.reduce_sum(real) * heads)
