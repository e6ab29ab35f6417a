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

import dataclasses

from absl import logging
import tensorflow as tf

from cli import FlagError
from cli.options import option, required
from distillation import layer_map as layer_map_lib
from distillation.options import DistillOptions, resolve_configs
from distillation.layerwise import LayerwiseDistillationTask
from fileio import resolve_input_files
import modeling
from pretraining import inputs as pretraining_inputs
from pretraining_data import features as features_lib
from training import inputs
from training import job as job_lib
from training import runtime


@dataclasses.dataclass(frozen=True, kw_only=True)
class GeneralDistillOptions(DistillOptions):
  """general_distill.py's flags: the shared ones (teacher, student, losses, runtime) and these."""
  input_file: str = required(
      "Input TF example files (can be a glob or comma separated), as "
      "create_pretraining_data.py writes them.")
  output_dir: str = required("Where the student's checkpoints are written.")
  max_seq_length: int = option(128, "The records' max_seq_length.")
  max_predictions_per_seq: int = option(20, "The records' max_predictions_per_seq.")
  restore_masked_tokens: bool = option(
      True, "Put the original tokens back at the masked positions (TinyBERT's choice), so "
      "both models read the original text.")
  train_batch_size: int = option(32, "Total batch size for training.")
  learning_rate: float = option(5e-5, "The initial learning rate for Adam.")
  num_train_steps: int = option(100000, "Number of training steps.")
  num_warmup_steps: int = option(10000, "Number of warmup steps.")

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


class GeneralDistillationTask(LayerwiseDistillationTask):
  """`LayerwiseDistillationTask` on pre-training records (`dynamic`: without masked-LM features)."""

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


class GeneralDistillJob(job_lib.Job):
  """general_distill.py: one step, training the student on the input files."""

  def __init__(self, options):
    self.options = o = options
    o.check_output_dir(o.output_dir)
    self.teacher_config, self.student_config, self.teacher_layers = resolve_configs(o)
    for config in (self.teacher_config, self.student_config):
      config.check_seq_length(o.max_seq_length)
    self.layer_map = layer_map_lib.layer_map(o.layer_map, self.student_config.num_hidden_layers,
                                             self.teacher_config.num_hidden_layers)
    super().__init__(options, o.student_init_checkpoint)
    self.task = None

  def steps(self):
    return [("train", "train")]

  def check_inputs(self):
    """Checks the records against the flags and the teacher; builds the task."""
    o = self.options
    files = resolve_input_files(o.input_file)
    dynamic = pretraining_inputs.check_records(files, o.max_seq_length,
                                               o.max_predictions_per_seq, self.teacher_config)
    if self.runner.is_chief:
      modeling.save_config(self.student_config, o.output_dir, "the student's config")
    self.task = GeneralDistillationTask(
        files, o.max_predictions_per_seq, dynamic, o.restore_masked_tokens, o.seed,
        teacher_config=self.teacher_config, teacher_checkpoint=o.teacher_init_checkpoint,
        student_config=self.student_config, layer_map=self.layer_map,
        weights=o.loss_weights(), projection=o.projection, padding=o.padded_positions,
        teacher_layers=self.teacher_layers,
        seq_length=o.max_seq_length)

  def train(self):
    logging.info("General distillation: student layer m learns from teacher layer %s%s",
                 ", ".join(f"{m}<-{t}" for m, t in enumerate(self.layer_map)),
                 f"; the student is made of teacher layers {self.teacher_layers}"
                 if self.teacher_layers else "")
    return self.train_task(self.task, self.options.num_train_steps)


def run(options):
  """Distills as the options say; returns the last logged scalars (loss and each term).

  Raises cli.UserError subclasses for what the user can fix.
  """
  return job_lib.run_job(GeneralDistillJob, options)["train"]
