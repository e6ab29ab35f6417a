"""General distillation (TinyBERT's first stage) on pre-training TFRecords: general_distill.py.

The input is create_pretraining_data.py's records as they are (Google's
features; masked or, with --dynamic_masking, unmasked). With
`restore_masked_tokens` (TinyBERT's choice) teacher and student read the
original text: the tokens at the masked positions are put back.

Layout of `output_dir`:
  model.ckpt-<step>.*, checkpoint   the student by Google name (`bert_weights`:
      run_classifier.py and extract_features.py read it as --init_checkpoint),
      the projections (`projections`), optimizer state; a rerun resumes.
  bert_config.json                  the student's config.
  events.out.tfevents.*             TensorBoard scalars, one per loss term.
"""

import contextlib
import dataclasses
from absl import logging
import tensorflow as tf

from cli import FlagError
from distillation import layer_map as layer_map_lib
from distillation.options import DistillOptions, resolve_configs
from distillation.task import DistillationTask
from fileio import resolve_input_files
import modeling
from pretraining import inputs as pretraining_inputs
from pretraining_data import features as features_lib
from training import inputs
from training import runner as runner_lib
from training import runtime


@dataclasses.dataclass(frozen=True, kw_only=True)
class GeneralDistillOptions(DistillOptions):
  """general_distill.py's own flags on top of the shared ones."""
  input_file: str
  output_dir: str
  max_seq_length: int = 128
  max_predictions_per_seq: int = 20
  restore_masked_tokens: bool = True
  train_batch_size: int = 32
  learning_rate: float = 5e-5
  num_train_steps: int = 100000
  num_warmup_steps: int = 10000

  def __post_init__(self):
    super().__post_init__()
    for name in ("max_seq_length", "max_predictions_per_seq", "train_batch_size",
                 "learning_rate", "num_train_steps"):
      runtime.check_positive(name, getattr(self, name))
    if self.num_warmup_steps < 0:
      raise FlagError(f"--num_warmup_steps must be >= 0, got {self.num_warmup_steps}")


def restore_masked_tokens(features):
  """The batch with `masked_lm_ids` back in `input_ids` [B, S] at `masked_lm_positions`.

  Only the weighted slots count: the padding slots point at position 0 ([CLS]).
  """
  positions = features["masked_lm_positions"]  # [B, P]
  real = features["masked_lm_weights"] > 0  # [B, P]
  rows = tf.broadcast_to(tf.range(tf.shape(positions)[0])[:, tf.newaxis], tf.shape(positions))
  indices = tf.boolean_mask(tf.stack([rows, positions], axis=-1), real)  # [K, 2]
  input_ids = tf.tensor_scatter_nd_update(features["input_ids"], indices,
                                          tf.boolean_mask(features["masked_lm_ids"], real))
  return dict(features, input_ids=input_ids)


class GeneralDistillationTask(DistillationTask):
  """`DistillationTask` on pre-training records (`dynamic`: without masked-LM features)."""

  def __init__(self, files, max_predictions_per_seq, dynamic, restore, seed=None, **kwargs):
    super().__init__(**kwargs)
    self.files = files
    self.max_predictions_per_seq = max_predictions_per_seq
    self.dynamic = dynamic
    self.restore = restore and not dynamic  # dynamic-masking records hold the original text
    self.seed = seed

  def dataset_fn(self, mode, batch_size):
    dataset_fn = inputs.tfrecord_dataset_fn(
        self.files, features_lib.feature_spec(self.seq_length, self.max_predictions_per_seq,
                                              self.dynamic),
        mode, batch_size, seed=self.seed)
    if not self.restore:
      return dataset_fn
    return lambda context: dataset_fn(context).map(restore_masked_tokens,
                                                   num_parallel_calls=tf.data.AUTOTUNE)


def run(options):
  """Distills as the options say; returns the last logged scalars (loss and each term).

  Raises cli.UserError subclasses for what the user can fix.
  """
  o = options
  o.check_output_dir(o.output_dir)
  teacher_config, student_config, teacher_layers = resolve_configs(o)
  for config in (teacher_config, student_config):
    config.check_seq_length(o.max_seq_length)
  mapped = layer_map_lib.layer_map(o.layer_map, student_config.num_hidden_layers,
                                   teacher_config.num_hidden_layers)
  task_kwargs = dict(
      teacher_config=teacher_config, teacher_checkpoint=o.teacher_init_checkpoint,
      student_config=student_config, layer_map=mapped, weights=o.loss_weights(),
      projection=o.projection, teacher_layers=teacher_layers, seq_length=o.max_seq_length)
  with contextlib.closing(runner_lib.Runner(o, o.output_dir, o.student_init_checkpoint)) as runner:
    files = resolve_input_files(o.input_file)
    dynamic = pretraining_inputs.check_records(files, o.max_seq_length,
                                               o.max_predictions_per_seq, teacher_config)
    if runner.is_chief:
      modeling.save_config(student_config, o.output_dir, "the student's config")
    task = GeneralDistillationTask(files, o.max_predictions_per_seq, dynamic,
                                   o.restore_masked_tokens, o.seed, **task_kwargs)
    logging.info("General distillation: student layer m learns from teacher layer %s%s",
                 ", ".join(f"{m}<-{t}" for m, t in enumerate(mapped)),
                 f"; the student is made of teacher layers {teacher_layers}"
                 if teacher_layers else "")
    return runner.train(task, o.train_batch_size, o.num_train_steps, o.learning_rate,
                        o.num_warmup_steps)
