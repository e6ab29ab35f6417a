"""`load_checkpoint`, `load_config`, `save_config`: one home for every checkpoint format."""

import json
import os

import tensorflow as tf

from fileio import atomic_write_text
from modeling.checkpoints import google_tf1, huggingface, tf2
from modeling.checkpoints.assign import CheckpointNotFoundError
from modeling.config import BertConfig, ConfigError

GOOGLE_TF1, HUGGINGFACE, TF2 = "google_tf1", "huggingface", "tf2"
GOOGLE_CONFIG_NAME = "bert_config.json"


def detect_format(path):
  """(format, resolved path) for a checkpoint path; see `load_checkpoint`."""
  path = os.fspath(path)
  if path.endswith(".safetensors") or huggingface.is_huggingface_dir(path):
    return HUGGINGFACE, path
  if tf.io.gfile.isdir(path):
    if tf.io.gfile.exists(os.path.join(path, google_tf1.DEFAULT_PREFIX + ".index")):
      prefix = os.path.join(path, google_tf1.DEFAULT_PREFIX)
    elif tf.train.latest_checkpoint(path):
      prefix = tf.train.latest_checkpoint(path)
    else:
      prefix = google_tf1.resolve_prefix(path)  # raises with the directory's contents
  elif tf.io.gfile.exists(path + ".index"):
    prefix = path
  else:
    raise CheckpointNotFoundError(f"no checkpoint at {path!r}: neither {path}.index nor a "
                            "directory with bert_model.ckpt.*, a TF2 checkpoint or "
                            "model.safetensors")
  _, reader = google_tf1.open_reader(prefix)
  if google_tf1.OBJECT_GRAPH_KEY in reader.get_variable_to_shape_map():
    return TF2, prefix
  return GOOGLE_TF1, prefix


def checkpoint_shapes(path):
  """{Google name: shape} of a checkpoint's entries in any format `load_checkpoint` reads
  (a Google TF1 checkpoint's optimizer state included; `names.is_optimizer_variable`)."""
  kind, resolved = detect_format(path)
  if kind == HUGGINGFACE:
    return huggingface.read_shapes(resolved)
  if kind == TF2:
    return tf2.read_shapes(resolved)
  return google_tf1.open_reader(resolved)[1].get_variable_to_shape_map()


def load_checkpoint(model, path):
  """Loads weights into a `modeling` model, detecting the checkpoint's format.

  `path` may be:
    - a Google TF1 checkpoint prefix (`.../bert_model.ckpt`) or a directory
      holding `bert_model.ckpt.*`;
    - an HF directory with `model.safetensors` (or a sharded index), or the
      `.safetensors` file;
    - one of our TF2 checkpoints (prefix, or a `CheckpointManager` directory).
  Returns a `LoadReport`; raises CheckpointError (CheckpointNotFoundError: no checkpoint there) with
  what is wrong.
  """
  kind, resolved = detect_format(path)
  if kind == HUGGINGFACE:
    return huggingface.load_huggingface_checkpoint(model, resolved)
  if kind == TF2:
    return tf2.restore_model(model, resolved)
  return google_tf1.load_google_checkpoint(model, resolved)


def load_config(path):
  """The `BertConfig` for a checkpoint or a config file.

  - a `.json` file, or any other file but `.safetensors`: Google's
    `bert_config.json`, or HF's `config.json` (it has `model_type`; HF's "gelu"
    is read as exact GELU); so a file given by mistake is reported, not passed
    over for the config beside it;
  - an HF directory or `.safetensors` file: its `config.json`;
  - any other checkpoint (a prefix or a directory): the `bert_config.json` of its directory.
  """
  path = os.fspath(path)
  is_file = tf.io.gfile.exists(path) and not tf.io.gfile.isdir(path)
  if path.endswith(".json") or (is_file and not path.endswith(".safetensors")):
    try:
      with tf.io.gfile.GFile(path, "r") as f:
        is_hf = "model_type" in json.load(f)
    except (tf.errors.OpError, ValueError, TypeError):
      is_hf = False  # BertConfig.from_json_file reports the problem.
    return huggingface.load_hf_config(path) if is_hf else BertConfig.from_json_file(path)
  directory = path if tf.io.gfile.isdir(path) else os.path.dirname(path)
  if path.endswith(".safetensors") or huggingface.is_huggingface_dir(path):
    return huggingface.load_hf_config(directory)
  config_file = os.path.join(directory, GOOGLE_CONFIG_NAME)
  if not tf.io.gfile.exists(config_file):
    raise ConfigError(f"no {GOOGLE_CONFIG_NAME} beside checkpoint {path!r}; pass the "
                      "config file explicitly")
  return BertConfig.from_json_file(config_file)


def save_config(config, directory, source="--bert_config_file"):
  """Writes directory/bert_config.json, the config of the checkpoints written there.

  Once checkpoints exist it must stay as it is: ConfigError when `config`
  differs (source: what the user gave it with, for the message).
  """
  path = os.path.join(directory, GOOGLE_CONFIG_NAME)
  if tf.train.latest_checkpoint(directory) and tf.io.gfile.exists(path):
    if BertConfig.from_json_file(path) != config:
      raise ConfigError(f"{source} differs from {path}, the config of the checkpoints "
                        f"in {directory}: resume with the same config or use a new output_dir")
    return
  atomic_write_text(path, config.to_json_string())


def resolve_config(bert_config_file, init_checkpoint, output_dir=None):
  """The fine-tuning scripts' config: bert_config_file, else the one stored with init_checkpoint,
  else the bert_config.json of output_dir (a finished or resumed run's, `save_config`).

  init_checkpoint is then checked first (CheckpointNotFoundError), so that a file that is no
  checkpoint (a .tfrecord given by mistake) is named as such, not read as a config.
  """
  if bert_config_file:
    return load_config(bert_config_file)
  if not init_checkpoint:
    saved = os.path.join(output_dir, GOOGLE_CONFIG_NAME) if output_dir else None
    if saved and tf.io.gfile.exists(saved):
      return BertConfig.from_json_file(saved)
    raise ConfigError("pass bert_config_file (or an init_checkpoint that has its config beside "
                      "it, such as an HF directory with config.json" +
                      (", or the output_dir of a run that wrote its bert_config.json)"
                       if output_dir else ")"))
  detect_format(init_checkpoint)
  return load_config(init_checkpoint)


class BertCheckpointing:
  """A trainer task's checkpoint methods (`training.task.Task`) for BERT models.

  output_dir's checkpoints are `tf2.new_checkpoint`s (weights by Google name),
  so each is also an init_checkpoint for every script; warm starts and
  evaluation read any format `load_checkpoint` detects.
  """

  def new_checkpoint(self, model, optimizer, **extra):
    return tf2.new_checkpoint(model, optimizer, **extra)

  def load_weights(self, model, path):
    return load_checkpoint(model, path).summary()
