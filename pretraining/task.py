"""The pre-training task: model, loss and metrics, as Google's run_pretraining.

The loss is Google's masked-LM + next-sentence loss. The metrics are those of
Google's `metric_fn`, with its names, and serve both the training summaries
and eval_results.txt:
  masked_lm_accuracy: accuracy over the prediction slots, weighted by
    masked_lm_weights (padding slots do not count);
  masked_lm_loss: the per-slot loss, mean weighted by masked_lm_weights
    (sum w*l / sum w over all batches);
  next_sentence_accuracy, next_sentence_loss: plain means over examples.
"""

import tensorflow as tf
import tf_keras

import modeling
from pretraining import dynamic_masking
from pretraining_data import features as features_lib
from training import inputs
from training import task as task_lib

# The masks' key without --seed (create_pretraining_data's default --random_seed).
DYNAMIC_MASKING_SEED = 12345


class PretrainingTask(modeling.BertCheckpointing, task_lib.Task):
  """Masked LM + next sentence on Google's pre-training TFRecords."""

  def __init__(self, bert_config, files, max_seq_length, max_predictions_per_seq, seed=None,
               masker=None):
    """masker: a `dynamic_masking.DynamicMasker` for records without masks, else None."""
    self.bert_config = bert_config
    self.files = files
    self.max_seq_length = max_seq_length
    self.max_predictions_per_seq = max_predictions_per_seq
    self.seed = seed
    self.masker = masker

  def build_model(self):
    """Encoder + masked-LM and next-sentence heads; the last layer runs at the masked slots only."""
    return modeling.build_pretraining_model(
        self.bert_config, seq_length=self.max_seq_length,
        max_predictions_per_seq=self.max_predictions_per_seq, outputs="positions")

  def dataset_fn(self, mode, batch_size):
    # Evaluation drops the last partial batch, as Google's input_fn does.
    dynamic = self.masker is not None
    dataset_fn = inputs.tfrecord_dataset_fn(
        self.files, features_lib.feature_spec(self.max_seq_length, self.max_predictions_per_seq,
                                              dynamic),
        mode, batch_size, seed=self.seed, drop_remainder=True)
    if not dynamic:
      return dataset_fn
    # Evaluation masks alike at every run: a fixed key, whatever --seed.
    seed = DYNAMIC_MASKING_SEED if self.seed is None or mode != task_lib.TRAIN else self.seed
    return dynamic_masking.masked_dataset_fn(dataset_fn, self.masker, seed)

  def loss(self, features, outputs):
    """(total loss, metric updates) for one per-replica batch."""
    mlm_logits = outputs["masked_lm_logits"]  # [B, P, V] float32
    nsp_logits = outputs["next_sentence_logits"]  # [B, 2] float32
    weights = features["masked_lm_weights"]  # [B, P]
    # The predictions are the logits' argmax, as in Google's metric_fn.
    mlm_loss, mlm_per_slot, mlm_predictions = modeling.masked_lm_loss(
        mlm_logits, features["masked_lm_ids"], weights)
    nsp_loss, nsp_per_example, nsp_predictions = modeling.next_sentence_loss(
        nsp_logits, features["next_sentence_labels"])
    nsp_labels = tf.reshape(features["next_sentence_labels"], [-1])  # [B]
    updates = {
        "masked_lm_accuracy": (features["masked_lm_ids"], mlm_predictions, weights),
        "masked_lm_loss": (mlm_per_slot, weights),
        "next_sentence_accuracy": (nsp_labels, nsp_predictions),
        "next_sentence_loss": (nsp_per_example,),
    }
    return mlm_loss + nsp_loss, updates

  def metrics(self):
    return {
        "masked_lm_accuracy": tf_keras.metrics.Accuracy("masked_lm_accuracy"),
        "masked_lm_loss": tf_keras.metrics.Mean("masked_lm_loss"),
        "next_sentence_accuracy": tf_keras.metrics.Accuracy("next_sentence_accuracy"),
        "next_sentence_loss": tf_keras.metrics.Mean("next_sentence_loss"),
    }
