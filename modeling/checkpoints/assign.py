"""Copying named arrays into a model's variables, strictly, with a report."""

import dataclasses

from absl import logging
import numpy as np
import tensorflow as tf

from cli import UserError

from modeling.checkpoints import names as names_lib


# Problems named in the one line of a CheckpointError (the count says how many there are).
SHOWN_PROBLEMS = 3


class CheckpointError(UserError, ValueError):
  """A checkpoint that does not fit the model (or is not a BERT checkpoint)."""


class CheckpointNotFoundError(CheckpointError, FileNotFoundError):
  """No checkpoint at the path given; the message names it."""


@dataclasses.dataclass
class LoadReport:
  """What a load did: weights loaded, heads left as initialized, entries ignored."""
  source: str
  loaded: list = dataclasses.field(default_factory=list)
  heads_absent: list = dataclasses.field(default_factory=list)
  ignored: list = dataclasses.field(default_factory=list)

  def summary(self):
    text = f"{self.source}: loaded {len(self.loaded)} weights"
    if self.heads_absent:
      text += f"; not in checkpoint (left as initialized): {', '.join(self.heads_absent)}"
    if self.ignored:
      shown = ", ".join(self.ignored[:6]) + (", ..." if len(self.ignored) > 6 else "")
      text += f"; ignored {len(self.ignored)} non-model entries ({shown})"
    return text


def _shape_problem(name, ckpt_shape, variable):
  model_shape = list(variable.shape)
  if list(ckpt_shape) == model_shape:
    return None
  hint = ""
  if name == "bert/embeddings/word_embeddings":
    hint = f" (vocab_size {ckpt_shape[0]} in checkpoint vs {model_shape[0]} in model)"
  elif name == "bert/embeddings/position_embeddings":
    hint = " (max_position_embeddings differs)"
  elif name == "bert/embeddings/token_type_embeddings":
    hint = " (type_vocab_size differs)"
  return f"{name}: checkpoint {list(ckpt_shape)} vs model {model_shape}{hint}"


def assign_named_arrays(model, shapes, get_array, source):
  """Loads every model weight from a checkpoint seen through Google's names.

  Args:
    model: a model built by `modeling` (encoder, pre-training or classifier).
    shapes: dict Google name -> shape of the checkpoint's entries.
    get_array: callable Google name -> numpy array.
    source: text naming the checkpoint, for errors and the report.

  The encoder is strict: a missing, mis-shaped or extra `bert/` weight raises
  CheckpointError, one line counting the problems and naming the first. A head
  is loaded when all its weights are present and reported when none is;
  optimizer state is ignored. The pooler may be absent where no head loaded
  uses it (`names.pooler_is_optional`: HF's BertForQuestionAnswering and
  BertForMaskedLM have none); it is then reported and left as initialized.
  """
  encoder = names_lib.find_encoder(model)
  wanted = names_lib.encoder_variables(encoder)
  if not any(name.startswith(names_lib.ENCODER_PREFIX) for name in shapes):
    raise CheckpointError(f"{source} is not a BERT checkpoint: it has no 'bert/...' weights "
                          f"(first entries: {sorted(shapes)[:5]})")
  report = LoadReport(source)
  pooler = [name for name in wanted if name.startswith(names_lib.POOLER_PREFIX)]
  if (not any(name in shapes for name in pooler)
      and names_lib.pooler_is_optional(names_lib.head_variables(model), shapes)):
    for name in pooler:
      del wanted[name]
    report.heads_absent.append(names_lib.POOLER_LABEL)
  problems = [f"missing {name} {list(var.shape)}" for name, var in wanted.items()
              if name not in shapes]
  extra = sorted(name for name in shapes if name.startswith(names_lib.ENCODER_PREFIX)
                 and name not in wanted and not names_lib.is_optimizer_variable(name))
  problems += [f"unexpected {name} {list(shapes[name])}" for name in extra]
  ckpt_layers = {names_lib.layer_index(n) for n in shapes} - {None}
  model_layers = names_lib.num_layers(encoder)
  if ckpt_layers and len(ckpt_layers) != model_layers:
    problems.insert(0, f"num_hidden_layers differs: checkpoint has {len(ckpt_layers)} layers, "
                    f"model has {model_layers}")
  heads = names_lib.head_variables(model)
  for head, label in names_lib.HEAD_LABELS.items():
    head_vars = heads.get(head)
    if head_vars is None:
      continue
    found = [name for name in head_vars if name in shapes]
    if not found:
      report.heads_absent.append(label)
    elif len(found) < len(head_vars):
      problems += [f"missing {name} {list(var.shape)} ({label})"
                   for name, var in head_vars.items() if name not in shapes]
    else:
      wanted.update(head_vars)
  problems += [p for p in (_shape_problem(name, shapes[name], var)
                           for name, var in wanted.items() if name in shapes) if p]
  if problems:
    shown = "; ".join(problems[:SHOWN_PROBLEMS])
    more = f"; and {len(problems) - SHOWN_PROBLEMS} more" if len(problems) > SHOWN_PROBLEMS else ""
    raise CheckpointError(f"{source} does not fit the model ({len(problems)} problem(s)): "
                          f"{shown}{more}")
  for name, var in wanted.items():
    try:
      value = get_array(name)
    except (tf.errors.OpError, IndexError) as e:  # TensorFlow's reader on a cut or damaged file
      raise CheckpointError(f"{source}: cannot read {name} ({e}): the checkpoint's data is cut "
                            "or damaged (a partial copy?)") from None
    var.assign(np.asarray(value, dtype=var.dtype.as_numpy_dtype))
    report.loaded.append(name)
  report.ignored = sorted(name for name in shapes if name not in wanted)
  logging.info(report.summary())
  return report
