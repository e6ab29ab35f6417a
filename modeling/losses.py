"""Google's pre-training losses, on a softmax cross-entropy: ours, with a hand-written
gradient, or TensorFlow's (the kernel family, `modeling.kernels`, read when a loss is
computed or traced)."""

import tensorflow as tf

from modeling.kernels import current_kernels


def sparse_softmax_cross_entropy(logits, labels):
  """-log softmax(logits)[label] per row, and each row's argmax.

  logits float32 [N, C], labels int32 [N] -> (loss [N], predictions int32 [N]).
  "keras" kernels: `tf.nn.sparse_softmax_cross_entropy_with_logits` and
  `tf.argmax` (the first maximum). "fused": the same values, the loss
  as log-sum-exp minus the label's logit, around the row maximum that the
  argmax finds, so the metrics' argmax costs no extra pass; the gradient
  (softmax - one_hot) * dloss is one pass over the logits plus a scatter at
  the labels, with no softmax kept between the two. Over the masked LM's
  vocabulary-wide logits these passes are a noticeable part of a training step.
  """
  predictions = tf.argmax(logits, axis=-1, output_type=tf.int32)  # [N]
  if current_kernels() == "keras":
    return tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits), predictions
  indices = tf.stack([tf.range(tf.shape(labels)[0]), labels], axis=1)  # [N, 2]

  @tf.custom_gradient
  def cross_entropy(logits):
    row_max = tf.gather(logits, predictions, batch_dims=1)[:, tf.newaxis]  # [N, 1]
    log_sum_exp = row_max + tf.math.log(
        tf.reduce_sum(tf.exp(logits - row_max), axis=-1, keepdims=True))  # [N, 1]
    loss = log_sum_exp[:, 0] - tf.gather_nd(logits, indices)

    def grad(dloss):
      return tf.tensor_scatter_nd_sub(tf.exp(logits - log_sum_exp) * dloss[:, tf.newaxis],
                                      indices, dloss)
    return loss, grad
  return cross_entropy(logits), predictions


def masked_lm_loss(logits, label_ids, label_weights):
  """Google's masked-LM loss: sum(w * -log p(label)) / (sum(w) + 1e-5).

  Args: logits float [B, P, V], label_ids int [B, P], label_weights float [B, P].
  Returns (loss scalar, per-slot loss [B, P], predicted ids int32 [B, P]).
  """
  # -log softmax at the label: Google's one-hot sum, over [B*P, V] rows.
  vocab_size = tf.shape(logits)[-1]
  per_slot, predictions = sparse_softmax_cross_entropy(
      tf.reshape(tf.cast(logits, tf.float32), [-1, vocab_size]),
      tf.reshape(tf.cast(label_ids, tf.int32), [-1]))
  per_slot = tf.reshape(per_slot, tf.shape(label_ids))  # [B, P]
  predictions = tf.reshape(predictions, tf.shape(label_ids))  # [B, P]
  weights = tf.cast(label_weights, tf.float32)
  loss = tf.reduce_sum(weights * per_slot) / (tf.reduce_sum(weights) + 1e-5)
  return loss, per_slot, predictions


def next_sentence_loss(logits, labels):
  """Google's next-sentence loss: mean of -log p(label); labels int [B] or [B, 1].

  Returns (loss scalar, per-example loss [B], predicted labels int32 [B]).
  """
  labels = tf.reshape(tf.cast(labels, tf.int32), [-1])
  per_example, predictions = sparse_softmax_cross_entropy(tf.cast(logits, tf.float32),
                                                          labels)  # [B]
  return tf.reduce_mean(per_example), per_example, predictions

