"""The classification task: Google's run_classifier model, loss and metrics on the runner.

One loss for training and evaluation (`per_example_loss`): softmax
cross-entropy over the classes (squared error for regression), as Google's
`create_model`. Evaluation feeds the same function the eval set's logits.
"""

import numpy as np
import tensorflow as tf
import tf_keras

from classification import tfrecords
from classification.metrics import compute_metrics
import modeling
from modeling.losses import sparse_softmax_cross_entropy
from training import inputs
from training import task as task_lib


def per_example_loss(logits, labels, is_regression):
  """float32 [B]: -log softmax(logits)[label], or (logits[:, 0] - label)^2 for regression.

  logits [B, num_labels] (num_labels = 1 for regression), labels [B].
  """
  logits = tf.cast(logits, tf.float32)
  if is_regression:
    return tf.square(logits[:, 0] - tf.cast(labels, tf.float32))
  loss, _ = sparse_softmax_cross_entropy(logits, tf.cast(labels, tf.int32))
  return loss


# Batches are cut to their longest row rounded up to this: at most
# max_seq_length / 16 shapes (128 -> 8) for the kernels compiled per shape.
TRIM_MULTIPLE = 16


class ClassifierTask(modeling.BertCheckpointing, task_lib.Task):
  """The classifier on Google's [CLS] pooled output, over record files by mode."""

  def __init__(self, bert_config, num_labels, max_seq_length, record_files, task_name,
               is_regression=False, seed=None):
    self.bert_config = bert_config
    self.num_labels = num_labels
    self.max_seq_length = max_seq_length
    self.record_files = dict(record_files)  # {mode: TFRecord path}, written before it is read
    self.task_name = task_name
    self.is_regression = is_regression
    self.seed = seed

  def build_model(self):
    # Any sequence length: each batch comes cut to its longest row (dataset_fn).
    return modeling.build_classifier(self.bert_config, self.num_labels)

  def dataset_fn(self, mode, batch_size):
    return inputs.tfrecord_dataset_fn(
        [self.record_files[mode]],
        tfrecords.feature_spec(self.max_seq_length, self.is_regression), mode, batch_size,
        seed=self.seed, trim=(TRIM_MULTIPLE, modeling.INPUT_NAMES))

  def loss(self, features, logits):
    labels = features["label_ids"]
    loss = tf.reduce_mean(per_example_loss(logits, labels, self.is_regression))
    if self.is_regression:
      return loss
    return loss, {"accuracy": (labels, tf.argmax(logits, -1))}

  def metrics(self):
    return {} if self.is_regression else {"accuracy": tf_keras.metrics.Accuracy("accuracy")}

  def eval_results(self, logits, labels, batch_size):
    """Google's eval keys from the eval set's logits [n, num_labels] and labels [n].

    eval_loss: the mean per-example loss; loss: the mean of the batch means
    (Estimator's `loss`; it differs when the last batch is smaller); plus the
    task's metrics (`classification.metrics`: eval_accuracy, eval_f1, ...).
    """
    losses = per_example_loss(logits, labels, self.is_regression).numpy()
    batch_means = [losses[i:i + batch_size].mean() for i in range(0, len(losses), batch_size)]
    results = compute_metrics(self.task_name, logits, labels, is_regression=self.is_regression)
    results.update(eval_loss=float(losses.mean()), loss=float(np.mean(batch_means)))
    return results
