"""Resumable checkpoints in `output_dir`, written by the chief only.

What a checkpoint tracks is the job's choice (`Trainer`'s `checkpoint_fn`);
BERT jobs write `modeling.new_checkpoint`s, which `modeling.load_checkpoint`
reads back into any BERT model (evaluation, fine-tuning, features).
"""

import os
import re
import shutil
import signal
import tempfile

from absl import logging
import tensorflow as tf

from cli import UserError
from fileio import filesystem
from fileio.atomic import tensorflow_full_disk

# Estimator's prefix: files are model.ckpt-<step>.index / .data-*.
CHECKPOINT_NAME = 'model.ckpt'


def checkpoint_step(path):
  """The global step in a checkpoint path such as .../model.ckpt-1000."""
  match = re.search(r'-(\d+)$', path)
  if not match:
    raise ValueError(f'checkpoint path {path!r} does not end in -<step>')
  return int(match.group(1))


class CheckpointStateError(UserError):
  """Checkpoints in a run's directory that its `checkpoint` file does not list (missing or
  unreadable): starting over would overwrite them."""


def latest_checkpoint(directory):
  """The latest checkpoint of `directory` (its `checkpoint` file), or None if it has none;
  CheckpointStateError when checkpoint files lie there but that file does not list them."""
  latest = tf.train.latest_checkpoint(directory)
  if latest is None:
    found = filesystem.glob(os.path.join(directory, f'{CHECKPOINT_NAME}-*.index'))
    if found:
      names = sorted(os.path.basename(f)[:-len('.index')] for f in found)
      raise CheckpointStateError(
          f'{directory} holds checkpoints ({", ".join(names)}) that its '
          f'{os.path.join(directory, "checkpoint")} file does not list (missing or unreadable): '
          'starting over would overwrite them; restore that file, or move the checkpoints away')
  return latest


# What separates a note's two parts after `cli.run`'s `interrupted; ` and `terminated: `.
SEPARATORS = {signal.SIGINT: ": ", signal.SIGTERM: "; "}


def interrupted_note(output_dir, signum=signal.SIGINT):
  """What a stopped run kept: the checkpoint in `output_dir` that the same command resumes.

  Worded for `cli.run`'s line after Ctrl-C (`interrupted; <note>`) or, with
  signum SIGTERM, after `terminated: `.
  """
  latest = tf.train.latest_checkpoint(output_dir) if output_dir else None
  return kept_note(latest, signum) if latest else (
      f"no checkpoint in {output_dir} yet{SEPARATORS[signum]}the same command starts over")


def kept_note(checkpoint, signum=signal.SIGINT):
  """`cli.run`'s note for a run that stopped on `signum` with `checkpoint` kept."""
  return (f"kept {checkpoint}{SEPARATORS[signum]}the same command resumes from step "
          f"{checkpoint_step(checkpoint)}")


class InputPositionError(Exception):
  """A checkpoint's input position does not fit the input pipeline (changed since it was saved)."""


class Checkpointer:
  """Saves `checkpoint` every so often and restores the latest one.

  Non-chief workers take part in each save (it can involve collectives) but
  write to a temporary directory that is deleted right after.
  """

  def __init__(self, checkpoint, directory, max_to_keep, is_chief):
    self._checkpoint = checkpoint
    self._directory = directory
    self._is_chief = is_chief
    self._restored = None
    if is_chief:
      self._manager = tf.train.CheckpointManager(
          checkpoint, directory, max_to_keep, checkpoint_name=CHECKPOINT_NAME)

  @property
  def latest(self):
    """The latest checkpoint in `directory`, or None (see `latest_checkpoint`)."""
    return latest_checkpoint(self._directory)

  def restore_latest(self, into=None):
    """Restores the latest checkpoint; returns its path, or None if none.

    into: restore these objects (some of those saved) instead. Optimizer slots
    and hyper-parameters are created by the first training step and restored
    then; `skip_pending` when no step will run. InputPositionError when the
    saved input iterator does not fit the pipeline (the iterator is then unusable).
    """
    latest = self.latest
    if latest is None:
      return None
    try:
      self._restored = (into or self._checkpoint).restore(latest)
    except tf.errors.OpError as e:
      if 'DeserializeIterator' in str(e):
        raise InputPositionError(latest) from e
      raise
    try:
      self._restored.assert_existing_objects_matched()
    except AssertionError:
      raise CheckpointStateError(
          f'{latest} does not hold this job\'s state (another kind of run wrote it): use '
          'another output directory') from None
    if into is not None:
      self._restored.expect_partial()  # what `into` leaves out is left out on purpose
    logging.info('Restored checkpoint %s at step %d', latest, checkpoint_step(latest))
    return latest

  def skip_pending(self):
    """Drops what the restore left for the first training step (no warning about it at exit)."""
    if self._restored is not None:
      self._restored.expect_partial()

  def save(self, step):
    """Saves the state as checkpoint `step`; the previous checkpoints stay as they are.

    A failed save (Ctrl-C included) deletes its partial `model.ckpt-<step>_temp`;
    a full disk (TensorFlow's ResourceExhaustedError) becomes OSError ENOSPC or
    EDQUOT naming the checkpoint.
    """
    if self._is_chief:
      prefix = os.path.join(self._directory, f'{CHECKPOINT_NAME}-{step}')
      try:
        path = self._manager.save(checkpoint_number=step)
      except BaseException as e:
        for partial in filesystem.glob(prefix + '_temp*'):
          filesystem.delete(partial)
        full_disk = tensorflow_full_disk(e, prefix)
        if full_disk:
          raise full_disk from None
        raise
      logging.info('Saved checkpoint %s', path)
      return
    tmpdir = tempfile.mkdtemp(prefix='checkpoint_')
    try:
      tf.train.CheckpointManager(
          self._checkpoint, tmpdir, 1,
          checkpoint_name=CHECKPOINT_NAME).save(checkpoint_number=step)
    finally:
      shutil.rmtree(tmpdir, ignore_errors=True)
