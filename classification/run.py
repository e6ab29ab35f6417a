"""The library behind `run_classifier.py`: fine-tune, evaluate, predict and export.

Mirrors Google's `run_classifier.py`: the classifier head on the pooled [CLS]
output, AdamWeightDecay with warmup_proportion warm-up and linear decay over
num_train_steps = int(len(train_examples) / train_batch_size * num_train_epochs),
TFRecords `train.tf_record` / `eval.tf_record` / `predict.tf_record` in
output_dir, `eval_results.txt` and `test_results.tsv`. Training runs in
`training.loop.Trainer` (strategies, mixed precision, XLA, checkpoints and
resume in output_dir); weights start from `init_checkpoint` in any format
`modeling.load_checkpoint` reads.
"""

import dataclasses
import hashlib
import json
import os

from absl import logging
import numpy as np
import tensorflow as tf
import tf_keras

from classification import labels as labels_lib
from classification import outputs
from classification import registry
from classification import tfrecords
from classification.features import pad_to_batch_multiple
from classification.metrics import compute_metrics
import modeling
import tokenization
from training import checkpointing
from training import evaluation
from training import loop
from training import optimizer as optimizer_lib
from training import precision
from training import strategy as strategy_lib

TRAIN_RECORD, EVAL_RECORD, PREDICT_RECORD = "train.tf_record", "eval.tf_record", "predict.tf_record"
EVAL_RESULTS, TEST_RESULTS = "eval_results.txt", "test_results.tsv"
# Google's training shuffle buffer (records).
SHUFFLE_BUFFER = 100


@dataclasses.dataclass
class ClassifierOptions:
  """run_classifier's flags (Google's names and defaults; see the README)."""
  task_name: str
  data_dir: str
  vocab_file: str
  output_dir: str
  bert_config_file: str = None
  init_checkpoint: str = None
  do_lower_case: bool = True
  max_seq_length: int = 128
  do_train: bool = False
  do_eval: bool = False
  do_predict: bool = False
  train_batch_size: int = 32
  eval_batch_size: int = 8
  predict_batch_size: int = 8
  learning_rate: float = 5e-5
  num_train_epochs: float = 3.0
  warmup_proportion: float = 0.1
  save_checkpoints_steps: int = 1000
  iterations_per_loop: int = 1000
  log_steps: int = 100
  distribution_strategy: str = "one_device"
  num_gpus: int = None
  tpu_name: str = None
  tpu_zone: str = None
  gcp_project: str = None
  dtype: str = "float32"
  use_xla: bool = False
  seed: int = None
  export_dir: str = None
  task_options: dict = dataclasses.field(default_factory=dict)


class ClassifierRun:
  """One run_classifier invocation: data, model and the train/eval/predict/export steps."""

  def __init__(self, options):
    self.options = o = options
    if not (o.do_train or o.do_eval or o.do_predict or o.export_dir):
      raise ValueError("at least one of do_train, do_eval, do_predict or export_dir must be set")
    if o.init_checkpoint:
      o.init_checkpoint = os.fspath(o.init_checkpoint)
    tokenization.validate_case_matches_checkpoint(o.do_lower_case, o.init_checkpoint)
    self.processor = registry.get_processor(o.task_name, **o.task_options)
    self.task = registry.canonical_task_name(o.task_name)
    if not os.path.isdir(o.data_dir) and (o.do_train or o.do_eval or o.do_predict):
      raise FileNotFoundError(f"data_dir {o.data_dir!r} is not a directory")
    if not (o.bert_config_file or o.init_checkpoint):
      raise ValueError("pass bert_config_file (or an init_checkpoint that has its config "
                       "beside it, such as an HF directory with config.json)")
    self.config = modeling.load_config(o.bert_config_file or o.init_checkpoint)
    if o.max_seq_length > self.config.max_position_embeddings:
      raise ValueError(f"Cannot use sequence length {o.max_seq_length} because the BERT model "
                       f"was only trained up to sequence length "
                       f"{self.config.max_position_embeddings}")
    self.tokenizer = tokenization.FullTokenizer(o.vocab_file, do_lower_case=o.do_lower_case)
    if len(self.tokenizer.vocab) != self.config.vocab_size:
      raise ValueError(f"vocab_file {o.vocab_file} has {len(self.tokenizer.vocab)} tokens but the "
                       f"model config ({o.bert_config_file or o.init_checkpoint}) has vocab_size "
                       f"{self.config.vocab_size}: use the vocabulary the checkpoint was "
                       "trained with")
    self.is_regression = bool(getattr(self.processor, "is_regression", False))
    self.strategy = strategy_lib.build_strategy(o.distribution_strategy, o.num_gpus, o.tpu_name,
                                                o.tpu_zone, o.gcp_project)
    tf.io.gfile.makedirs(o.output_dir)
    self._train_examples = None
    self.model = None

  # ----- data

  def train_examples(self):
    if self._train_examples is None:
      self._train_examples = self.processor.get_train_examples(self.options.data_dir)
      if not self._train_examples:
        raise ValueError(f"no training examples in {self.options.data_dir}")
    return self._train_examples

  def label_list(self):
    """Labels in id order (None for regression); saved to output_dir for later runs."""
    if self.is_regression:
      return None
    try:
      return self.processor.get_labels()
    except ValueError:  # a generic task whose labels come from its training file
      path = os.path.join(self.options.output_dir, labels_lib.LABEL_LIST_FILE)
      if self.options.do_train:
        self.train_examples()
      elif os.path.exists(path):
        self.processor.set_labels(labels_lib.load_label_list(path)[0])
      else:
        raise ValueError(f"task {self.options.task_name!r} needs its labels: train first, or "
                         f"put {labels_lib.LABEL_LIST_FILE} in {self.options.output_dir}") from None
      return self.processor.get_labels()

  def num_labels(self):
    return 1 if self.is_regression else len(self.label_list())

  def _record_file(self, name, examples):
    """Writes examples to output_dir/name unless the cached file was made from the same input."""
    o = self.options
    path = os.path.join(o.output_dir, name)
    digest = hashlib.sha256(json.dumps([
        o.max_seq_length, o.do_lower_case, self.label_list(), _file_digest(o.vocab_file),
        [vars(e) for e in examples]],
        default=str).encode("utf-8")).hexdigest()
    stamp = path + ".sha256"
    if tf.io.gfile.exists(path) and tf.io.gfile.exists(stamp):
      with tf.io.gfile.GFile(stamp) as f:
        if f.read().strip() == digest:
          logging.info("Reusing %s (%d examples)", path, len(examples))
          return path
    tfrecords.file_based_convert_examples_to_features(
        examples, self.label_list(), o.max_seq_length, self.tokenizer, path)
    with tf.io.gfile.GFile(stamp + ".tmp", "w") as f:
      f.write(digest + "\n")
    tf.io.gfile.rename(stamp + ".tmp", stamp, overwrite=True)
    return path

  def _dataset_fn(self, path, batch_size, is_training):
    """dataset_fn(input_context) for the loop: records of this pipeline's shard, batched."""
    o = self.options

    def dataset_fn(context):
      d = tf.data.TFRecordDataset(path)
      if context.num_input_pipelines > 1:
        d = d.shard(context.num_input_pipelines, context.input_pipeline_id)
      if is_training:
        d = d.repeat().shuffle(SHUFFLE_BUFFER, seed=o.seed)
      d = d.map(lambda r: tfrecords.decode_record(r, o.max_seq_length, self.is_regression),
                num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
      d = d.batch(context.get_per_replica_batch_size(batch_size), drop_remainder=is_training)
      return d.prefetch(tf.data.AUTOTUNE)

    return dataset_fn

  # ----- model

  def build_model(self):
    return modeling.build_classifier(self.config, self.num_labels(),
                                     seq_length=self.options.max_seq_length)

  def loss_fn(self, features, logits):
    """Google's per-example loss, averaged: softmax cross-entropy (squared error for regression)."""
    labels = features["label_ids"]
    if self.is_regression:
      return tf.reduce_mean(tf.square(logits[:, 0] - tf.cast(labels, tf.float32)))
    per_example = tf_keras.losses.sparse_categorical_crossentropy(labels, logits,
                                                                  from_logits=True)
    return tf.reduce_mean(per_example), {"accuracy": (labels, tf.argmax(logits, -1))}

  def _metrics_fn(self):
    return {} if self.is_regression else {"accuracy": tf_keras.metrics.Accuracy()}

  def _warm_start(self, model):
    o = self.options
    if o.init_checkpoint:
      logging.info("Warm start: %s", modeling.load_checkpoint(model, o.init_checkpoint).summary())

  # ----- steps

  def train(self):
    o = self.options
    examples = self.train_examples()
    num_train_steps = int(len(examples) / o.train_batch_size * o.num_train_epochs)
    if num_train_steps < 1:
      raise ValueError(f"{len(examples)} examples, train_batch_size {o.train_batch_size} and "
                       f"num_train_epochs {o.num_train_epochs} give no training step")
    num_warmup_steps = int(num_train_steps * o.warmup_proportion)
    if not self.is_regression:
      labels_lib.save_label_list(o.output_dir, self.label_list())
    else:
      labels_lib.save_label_list(o.output_dir, [], is_regression=True)
    path = self._record_file(TRAIN_RECORD, examples)
    logging.info("***** Running training *****\n  Num examples = %d\n  Batch size = %d\n"
                 "  Num steps = %d", len(examples), o.train_batch_size, num_train_steps)
    trainer = loop.Trainer(
        self.strategy,
        loop.TrainConfig(output_dir=o.output_dir, train_batch_size=o.train_batch_size,
                         num_train_steps=num_train_steps,
                         save_checkpoints_steps=o.save_checkpoints_steps,
                         iterations_per_loop=o.iterations_per_loop, log_steps=o.log_steps,
                         dtype=o.dtype, use_xla=o.use_xla),
        model_fn=self.build_model,
        optimizer_fn=lambda: optimizer_lib.create_optimizer(o.learning_rate, num_train_steps,
                                                            num_warmup_steps),
        loss_fn=self.loss_fn,
        dataset_fn=self._dataset_fn(path, o.train_batch_size, is_training=True),
        metrics_fn=self._metrics_fn,
        init_fn=self._warm_start,
        checkpoint_fn=modeling.new_checkpoint)
    result = trainer.train()
    self.model = trainer.model
    self.global_step = trainer.global_step
    return result

  def _trained_model(self):
    """The model trained in this run, else output_dir's latest checkpoint, else init_checkpoint.

    Built with the `dtype` policy, so eval/predict/export compute alike with or without
    training in the same run.
    """
    if self.model is not None:
      return self.model
    o = self.options
    with self.strategy.scope(), precision.policy_scope(o.dtype):
      model = self.build_model()
    latest = tf.train.latest_checkpoint(o.output_dir)
    if latest:
      logging.info("Evaluating %s", modeling.load_checkpoint(model, latest).summary())
      self.global_step = checkpointing.checkpoint_step(latest)
    elif o.init_checkpoint:
      self._warm_start(model)
      self.global_step = 0
    else:
      raise ValueError(f"no checkpoint in output_dir {o.output_dir} and no init_checkpoint: "
                       "nothing to evaluate or predict with (set do_train)")
    self.model = model
    return model

  def _predict(self, path, batch_size):
    """Stacked model outputs over a record file, in file order."""
    model = self._trained_model()
    batches = evaluation.predict(self.strategy, model,
                                 self._dataset_fn(path, batch_size, is_training=False))
    return np.concatenate([np.asarray(b, np.float32) for b in batches], axis=0)

  def evaluate(self):
    """Dev-set metrics, written to eval_results.txt: eval_loss, global_step and the task's."""
    o = self.options
    examples = self.processor.get_dev_examples(o.data_dir)
    if not examples:
      raise ValueError(f"no dev examples in {o.data_dir}")
    path = self._record_file(EVAL_RECORD, examples)
    logging.info("***** Running evaluation *****\n  Num examples = %d\n  Batch size = %d",
                 len(examples), o.eval_batch_size)
    logits = self._predict(path, o.eval_batch_size)
    labels = np.array([float(e.label) for e in examples] if self.is_regression
                      else [self.label_list().index(e.label) for e in examples])
    if self.is_regression:
      loss = float(np.mean(np.square(logits[:, 0] - labels)))
    else:
      log_probs = logits - _logsumexp(logits)
      loss = float(-np.mean(log_probs[np.arange(len(labels)), labels]))
    result = compute_metrics(self.task, logits, labels, is_regression=self.is_regression)
    result.update(eval_loss=loss, global_step=self.global_step)
    evaluation.write_eval_results(os.path.join(o.output_dir, EVAL_RESULTS), result)
    return result

  def predict(self):
    """test_results.tsv: class probabilities (or the regression score), one line per example."""
    o = self.options
    examples = self.processor.get_test_examples(o.data_dir)
    path = self._record_file(PREDICT_RECORD, pad_to_batch_multiple(examples,
                                                                    o.predict_batch_size))
    logging.info("***** Running prediction *****\n  Num examples = %d (%d padding)\n"
                 "  Batch size = %d", len(examples),
                 -len(examples) % o.predict_batch_size, o.predict_batch_size)
    logits = self._predict(path, o.predict_batch_size)
    predictions = logits[:, 0] if self.is_regression else np.exp(logits - _logsumexp(logits))
    outputs.write_test_results(os.path.join(o.output_dir, TEST_RESULTS), predictions,
                               len(examples))
    return predictions[:len(examples)]

  def export(self):
    from classification import export  # pylint: disable=import-outside-toplevel
    o = self.options
    return export.export_saved_model(self._trained_model(), o.export_dir, o.vocab_file,
                                     o.do_lower_case, o.max_seq_length, self.label_list(),
                                     self.is_regression)

  def run(self):
    """Runs the requested steps; returns their results keyed train/eval/predict/export."""
    o = self.options
    done = {}
    if o.do_train:
      done["train"] = self.train()
    if o.do_eval:
      done["eval"] = self.evaluate()
    if o.do_predict:
      done["predict"] = self.predict()
    if o.export_dir:
      done["export"] = self.export()
    return done


def run_classifier(options):
  """Sets the seed and runs `options` (a ClassifierOptions)."""
  if options.seed is not None:
    tf_keras.utils.set_random_seed(options.seed)
  return ClassifierRun(options).run()


def _logsumexp(logits):
  m = logits.max(axis=-1, keepdims=True)
  return m + np.log(np.exp(logits - m).sum(axis=-1, keepdims=True))


def _file_digest(path):
  with open(path, "rb") as f:
    return hashlib.sha256(f.read()).hexdigest()
