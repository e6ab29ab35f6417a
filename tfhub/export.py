"""export_tfhub.py's work: check the flags, build the model, load the weights, save atomically."""

import json
import os

from absl import logging
import tensorflow as tf

from cli import FlagError
import fileio
import modeling
from modeling.checkpoints.names import HEAD_LABELS
import tokenization
from tfhub.encoder import build_hub_encoder, serving_signatures
from tfhub.preprocessing import Preprocessing

EXPORT_TYPES = ("model", "model_with_mlm", "preprocessing")
# An asset of every export: what was exported from what. It also marks our SavedModels.
RECORD_FILE = "tfhub_export.json"


def check_flags(export_type, export_path, vocab_file, model_checkpoint_path, default_seq_length,
                overwrite):
  """Refuses, before any work, flags that cannot give a SavedModel (FlagError naming the flag)."""
  if export_type not in EXPORT_TYPES:
    raise FlagError(f"--export_type must be one of {', '.join(EXPORT_TYPES)}, "
                    f"got {export_type!r}")
  if not vocab_file:
    raise FlagError("--vocab_file is required")
  if export_type != "preprocessing" and not model_checkpoint_path:
    raise FlagError(f"--export_type={export_type} needs --model_checkpoint_path")
  if default_seq_length < 3:
    raise FlagError(f"--default_seq_length must be at least 3 ([CLS] A [SEP] B [SEP] needs "
                    f"room for one token), got {default_seq_length}")
  fileio.check_export_dir(export_path, None, overwrite, (os.path.join("assets", RECORD_FILE),),
                          "export_tfhub", flag="--export_path")


def _encoder(export_type, vocab_file, do_lower_case, bert_config_file, model_checkpoint_path):
  """The encoder to export, holding the checkpoint's weights; returns (model, record entries)."""
  modeling.detect_format(model_checkpoint_path)  # a missing checkpoint is named first
  config = modeling.resolve_config(bert_config_file, model_checkpoint_path)
  tokenization.FullTokenizer(vocab_file, do_lower_case).check_vocab_size(
      config.vocab_size, bert_config_file or model_checkpoint_path)
  encoder, weights_model = build_hub_encoder(config, with_mlm=export_type == "model_with_mlm")
  report = modeling.load_checkpoint(weights_model, model_checkpoint_path)
  if export_type == "model_with_mlm" and HEAD_LABELS["cls_predictions"] in report.heads_absent:
    raise modeling.CheckpointError(
        f"{model_checkpoint_path!r} has no masked-LM head (cls/predictions/*), which "
        "--export_type=model_with_mlm exports; use --export_type=model")
  # What TF Hub's BERT encoders carry for users who tokenize on their own.
  encoder.vocab_file = tf.saved_model.Asset(vocab_file)
  encoder.do_lower_case = tf.Variable(do_lower_case, trainable=False, name="do_lower_case")
  return encoder, {"model_checkpoint_path": os.fspath(model_checkpoint_path),
                   "bert_config": config.to_dict()}


def export_saved_model(export_type, export_path, vocab_file, do_lower_case=None,
                       bert_config_file=None, model_checkpoint_path=None, default_seq_length=128,
                       overwrite=False):
  """Writes the TF Hub SavedModel of `export_type` to export_path, replacing it atomically.

  export_type: "model" (the encoder, `tfhub.encoder`), "model_with_mlm" (plus
  its `.mlm`; the checkpoint must hold a masked-LM head) or "preprocessing"
  (`tfhub.preprocessing`). The model types read any checkpoint
  `modeling.load_checkpoint` does, with bert_config_file or the config stored
  with the checkpoint. Returns export_path.
  """
  check_flags(export_type, export_path, vocab_file, model_checkpoint_path, default_seq_length,
              overwrite)
  do_lower_case = tokenization.resolve_do_lower_case(do_lower_case, vocab_file)
  tokenization.validate_case_matches_checkpoint(do_lower_case, model_checkpoint_path)
  record = {"export_type": export_type, "vocab_file": os.fspath(vocab_file),
            "do_lower_case": do_lower_case}
  if export_type == "preprocessing":
    root = Preprocessing(vocab_file, do_lower_case, default_seq_length)
    record["default_seq_length"] = default_seq_length
  else:
    root, entries = _encoder(export_type, vocab_file, do_lower_case, bert_config_file,
                             model_checkpoint_path)
    record.update(entries)
  with (fileio.staging_directory(export_path) as staging,
        fileio.atomic_directory(export_path, overwrite) as saved):
    record_file = os.path.join(staging, RECORD_FILE)
    with open(record_file, "w", encoding="utf-8") as f:
      json.dump(record, f, indent=2)
    root.export_record = tf.saved_model.Asset(record_file)
    if export_type == "preprocessing":
      tf.saved_model.save(root, saved)
    else:  # A Keras SavedModel: what hub.KerasLayer(trainable=True) fine-tunes.
      root.save(saved, include_optimizer=False, save_format="tf",
                signatures=serving_signatures(root))
  logging.info("Wrote the TF Hub %s SavedModel to %s", export_type, export_path)
  return export_path
