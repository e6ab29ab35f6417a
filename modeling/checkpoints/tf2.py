"""Our own TF2 object-based checkpoints (`tf.train.Checkpoint`), as training writes them.

`new_checkpoint` tracks the model's weights in a dict keyed by their Google
names (object `bert_weights`), not through the Keras layer graph, whose
dependency names are positional (`layer_with_weights-N`). Restoring therefore
matches by name: a classifier restores the encoder of a pre-training
checkpoint, and a model of another size fails with the names that differ.
"""

import os
import re

import tensorflow as tf

from modeling.checkpoints import names as names_lib
from modeling.checkpoints.assign import (CheckpointError, CheckpointNotFoundError,
                                         assign_named_arrays)

WEIGHTS_OBJECT = "bert_weights"
# A weight's value; its optimizer slots hang below it (`<name>/.OPTIMIZER_SLOT/...`).
_KEY_RE = re.compile(r"^" + WEIGHTS_OBJECT + r"/([^/]+)/\.ATTRIBUTES/VARIABLE_VALUE$")
_SLOT_MARK = "/.OPTIMIZER_SLOT/"


def new_checkpoint(model, optimizer=None, **extra):
  """A `tf.train.Checkpoint` of `model`'s weights (by Google name), `optimizer` and `extra`.

  Save it with `tf.train.CheckpointManager`; resume training with
  `new_checkpoint(model, optimizer, ...).restore(path)`, or restore only the
  weights, into any model sharing the encoder, with `restore_model`.
  """
  objects = {WEIGHTS_OBJECT: names_lib.model_variables(model)}
  if optimizer is not None:
    objects["optimizer"] = optimizer
  objects.update(extra)
  return tf.train.Checkpoint(**objects)


def _unescape(local_name):
  """Inverts TF's escaping of object names in checkpoint keys ('/' -> '.S', '.' -> '..')."""
  return re.sub(r"\.(.)", lambda m: "/" if m.group(1) == "S" else m.group(1), local_name)


def resolve_prefix(path):
  """A checkpoint prefix for a prefix or a directory managed by `CheckpointManager`."""
  path = os.fspath(path)
  if tf.io.gfile.isdir(path):
    latest = tf.train.latest_checkpoint(path)
    if latest is None:
      raise CheckpointNotFoundError(
          f"no TF2 checkpoint in directory {path!r} (no 'checkpoint' file)")
    return latest
  if not tf.io.gfile.exists(path + ".index"):
    raise CheckpointNotFoundError(f"no checkpoint at {path!r}: {path}.index does not exist")
  return path


def _weight_keys(reader):
  """({Google name: checkpoint key} of the weights, [the other objects' names])."""
  keys, other = {}, []
  for key in reader.get_variable_to_shape_map():
    m = _KEY_RE.match(key)
    if m:
      keys[_unescape(m.group(1))] = key
    elif _SLOT_MARK in key:
      other.append("optimizer slots")
    elif not key.startswith("_"):
      other.append(key.split("/", 1)[0])
  return keys, other


def read_shapes(path):
  """{Google name: shape} of the weights in one of our TF2 checkpoints (prefix or directory)."""
  reader = tf.train.load_checkpoint(resolve_prefix(path))
  saved_shapes = reader.get_variable_to_shape_map()
  return {name: saved_shapes[key] for name, key in _weight_keys(reader)[0].items()}


def restore_model(model, path):
  """Restores `model`'s weights from one of our TF2 checkpoints, strictly, by name.

  Same rules and report as for Google checkpoints (`assign_named_arrays`);
  optimizer state and other objects are ignored.
  """
  prefix = resolve_prefix(path)
  reader = tf.train.load_checkpoint(prefix)
  saved_shapes = reader.get_variable_to_shape_map()
  keys, other = _weight_keys(reader)
  if not keys:
    raise CheckpointError(f"{prefix} has no '{WEIGHTS_OBJECT}' object; it was not written by "
                          f"modeling.new_checkpoint (objects: {sorted(set(other))})")
  shapes = {name: saved_shapes[key] for name, key in keys.items()}
  report = assign_named_arrays(model, shapes, lambda name: reader.get_tensor(keys[name]), prefix)
  report.ignored += sorted(set(other))
  return report
