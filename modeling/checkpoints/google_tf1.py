"""Google's name-based TF1 checkpoints (`bert_model.ckpt`): reading and writing."""

import os

from absl import logging
import tensorflow as tf

from modeling.checkpoints import names as names_lib
from modeling.checkpoints.assign import (CheckpointError, CheckpointNotFoundError,
                                         assign_named_arrays)

# The key every TF2 object-based checkpoint has and no TF1 name-based one has.
OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
DEFAULT_PREFIX = "bert_model.ckpt"


def resolve_prefix(path):
  """The checkpoint prefix for `path`: a prefix, or a directory holding bert_model.ckpt.*."""
  path = os.fspath(path)
  if tf.io.gfile.isdir(path):
    candidate = os.path.join(path, DEFAULT_PREFIX)
    if tf.io.gfile.exists(candidate + ".index"):
      return candidate
    indexes = sorted(f[:-len(".index")] for f in tf.io.gfile.listdir(path)
                     if f.endswith(".index"))
    if len(indexes) == 1:
      return os.path.join(path, indexes[0])
    raise CheckpointNotFoundError(f"no checkpoint in directory {path!r}: expected "
                            f"{DEFAULT_PREFIX}.index" +
                            (f" (found several: {indexes})" if indexes else ""))
  if not tf.io.gfile.exists(path + ".index"):
    raise CheckpointNotFoundError(f"no checkpoint at {path!r}: {path}.index does not exist")
  return path


def open_reader(path):
  """A `CheckpointReader` for a prefix or directory, with a clear error on bad files."""
  prefix = resolve_prefix(path)
  try:
    return prefix, tf.train.load_checkpoint(prefix)
  except (tf.errors.OpError, ValueError) as e:
    raise CheckpointError(f"cannot read checkpoint {prefix!r}: {e}") from None


def load_google_checkpoint(model, path):
  """Loads a Google TF1 checkpoint (prefix or directory) into `model`.

  Strict for the encoder; heads are loaded when present (see
  `assign_named_arrays`); Adam slots and global_step are ignored.
  Returns a `LoadReport`.
  """
  prefix, reader = open_reader(path)
  shapes = reader.get_variable_to_shape_map()
  if OBJECT_GRAPH_KEY in shapes:
    raise CheckpointError(f"{prefix} is a TF2 object-based checkpoint, not a Google TF1 one; "
                          "use modeling.load_checkpoint")
  return assign_named_arrays(model, shapes, reader.get_tensor, prefix)


def save_google_checkpoint(model, prefix, global_step=None):
  """Writes `model`'s weights as a Google TF1 checkpoint at `prefix`.

  Names and shapes are Google's (`bert/...`, and `cls/...` or `output_*` for
  the heads the model has), so `tf.train.load_checkpoint`, Google's
  `run_classifier.py`/`run_pretraining.py` and our loader read it. `global_step`
  (int64) is written when given. TensorFlow's bundle writer makes each file
  under a temporary name and renames it into place, the data file before the
  index, so a reader never opens a half-written checkpoint. Returns the prefix.
  """
  prefix = os.fspath(prefix)
  tensors = {name: tf.convert_to_tensor(var.numpy())
             for name, var in names_lib.model_variables(model).items()}
  if global_step is not None:
    tensors["global_step"] = tf.constant(global_step, tf.int64)
  names = sorted(tensors)
  if os.path.dirname(prefix):
    tf.io.gfile.makedirs(os.path.dirname(prefix))
  tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names, shape_and_slices=[""] * len(names),
                    tensors=[tensors[n] for n in names])
  logging.info("wrote Google TF1 checkpoint %s (%d variables)", prefix, len(names))
  return prefix

