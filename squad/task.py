"""The SQuAD task: Google's run_squad model and loss on the runner."""

import tensorflow as tf

import modeling
from modeling.losses import sparse_softmax_cross_entropy
from squad import records
from training import inputs
from training import task as task_lib


def span_loss(outputs, start_positions, end_positions):
  """Google's loss: the mean of the start and end cross-entropies over the positions.

  outputs: {"start_logits", "end_logits"} float32 [B, S]; positions int [B].
  """
  losses = []
  for logits, positions in ((outputs["start_logits"], start_positions),
                            (outputs["end_logits"], end_positions)):
    loss, _ = sparse_softmax_cross_entropy(tf.cast(logits, tf.float32),
                                           tf.cast(positions, tf.int32))
    losses.append(tf.reduce_mean(loss))
  return (losses[0] + losses[1]) / 2.0


class SquadTask(modeling.BertCheckpointing, task_lib.Task):
  """Start and end logits over the sequence output, over record files by mode."""

  def __init__(self, bert_config, max_seq_length, record_files, seed=None):
    self.bert_config = bert_config
    self.max_seq_length = max_seq_length
    self.record_files = dict(record_files)  # {mode: TFRecord path}, written before it is read
    self.seed = seed

  def build_model(self):
    return modeling.build_squad_model(self.bert_config, seq_length=self.max_seq_length)

  def dataset_fn(self, mode, batch_size):
    spec = records.feature_spec(self.max_seq_length, is_training=mode == task_lib.TRAIN)
    return inputs.tfrecord_dataset_fn([self.record_files[mode]], spec, mode, batch_size,
                                      seed=self.seed)

  def loss(self, features, outputs):
    return span_loss(outputs, features["start_positions"], features["end_positions"])
