"""Our own TF2 object-based checkpoints (`tf.train.Checkpoint`), as training writes them.

A checkpoint made by `new_checkpoint` names the encoder and each head as
separate objects (`encoder`, `masked_lm`, `next_sentence`, `classifier`)
besides the whole `model`, so a classifier can restore the encoder of a
pre-training checkpoint and vice versa.
"""

import os

from absl import logging
import tensorflow as tf

from modeling.checkpoints import names as names_lib
from modeling.checkpoints.assign import CheckpointError, LoadReport

# Our head layer name -> object name in the checkpoint.
_HEAD_OBJECTS = {"cls_predictions": "masked_lm", "cls_seq_relationship": "next_sentence",
                 "classifier": "classifier"}


def model_objects(model):
  """Object name -> trackable for the encoder and each head `model` has."""
  objects = {"encoder": names_lib.find_encoder(model)}
  for layer in model.layers:
    if layer.name in _HEAD_OBJECTS:
      objects[_HEAD_OBJECTS[layer.name]] = layer
  return objects


def new_checkpoint(model, optimizer=None, **extra):
  """A `tf.train.Checkpoint` of `model` (and its parts), `optimizer` and `extra` objects."""
  objects = model_objects(model)
  objects["model"] = model
  if optimizer is not None:
    objects["optimizer"] = optimizer
  objects.update(extra)
  return tf.train.Checkpoint(**objects)


def resolve_prefix(path):
  """A checkpoint prefix for a prefix or a directory managed by `CheckpointManager`."""
  path = os.fspath(path)
  if os.path.isdir(path):
    latest = tf.train.latest_checkpoint(path)
    if latest is None:
      raise FileNotFoundError(f"no TF2 checkpoint in directory {path!r} (no 'checkpoint' file)")
    return latest
  if not os.path.exists(path + ".index"):
    raise FileNotFoundError(f"no checkpoint at {path!r}: {path}.index does not exist")
  return path


def restore_model(model, path):
  """Restores `model`'s encoder and heads from one of our TF2 checkpoints.

  The encoder must be in the checkpoint, completely and with matching shapes;
  heads are restored when the checkpoint has them and reported otherwise.
  Optimizer state and other objects are left alone. Returns a `LoadReport`.
  """
  prefix = resolve_prefix(path)
  saved = {name.split("/", 1)[0] for name, _ in tf.train.list_variables(prefix)}
  objects = model_objects(model)
  if "encoder" not in saved:
    raise CheckpointError(f"{prefix} has no 'encoder' object; it was not written by "
                          f"modeling.new_checkpoint (top-level objects: {sorted(saved)})")
  report = LoadReport(prefix)
  present = {}
  for name, obj in objects.items():
    if name in saved:
      present[name] = obj
    else:
      report.heads_absent.append(name)
  try:
    status = tf.train.Checkpoint(**present).read(prefix)
    status.assert_existing_objects_matched()
  except (AssertionError, ValueError, tf.errors.OpError) as e:
    raise CheckpointError(f"{prefix} does not fit the model: {e}") from None
  report.loaded = sorted(present)
  report.ignored = sorted(saved - set(present))
  logging.info(report.summary())
  return report
