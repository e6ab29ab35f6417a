"""The Keras BERT model: config, layers, encoder, heads and checkpoint conversion.

Public API:
  BertConfig, ConfigError, PRESETS                 -- `bert_config.json`, presets
  KERNELS, set_kernels, kernels_scope, current_kernels  -- the kernel family (auto, fused, keras)
  build_encoder(config, outputs=...)               -- functional encoder
  build_pretraining_model(config, ...)             -- encoder + masked-LM + NSP heads
  build_classifier(config, num_labels, ...)        -- encoder + run_classifier's layer
  build_squad_model(config, ...)                   -- encoder + run_squad's span layer
  masked_lm_loss, next_sentence_loss              -- Google's losses
  load_checkpoint(model, path)                     -- Google TF1 / HF / our TF2, detected
  load_config(path)                                -- the BertConfig stored with a checkpoint
  resolve_config(bert_config_file, init_checkpoint, output_dir)  -- the trainers' config
  save_config(config, directory)                   -- bert_config.json beside checkpoints
  BertCheckpointing                                -- a trainer task's checkpoint methods
  save_google_checkpoint(model, prefix)            -- write Google's TF1 format
  new_checkpoint(model, ...), restore_model        -- our TF2 `tf.train.Checkpoint`s
Parameter accounting lives in `modeling.params` (also a CLI).
The layers live in `modeling.layers` (each holds one Google scope's variables;
`packing` runs them on a batch's real tokens only); layers, heads and losses are
built with the process's kernel family (`modeling.kernels`).
"""

from modeling.classifier import build_classifier
from modeling.config import PRESETS, BertConfig, ConfigError
from modeling.encoder import INPUT_NAMES, build_encoder
from modeling.heads import build_pretraining_model
from modeling.kernels import KERNELS, current_kernels, kernels_scope, set_kernels
from modeling.squad import build_squad_model
from modeling.losses import masked_lm_loss, next_sentence_loss
from modeling.checkpoints.assign import CheckpointError, CheckpointNotFoundError, LoadReport
from modeling.checkpoints.auto import (BertCheckpointing, detect_format, load_checkpoint,
                                       load_config, resolve_config, save_config)
from modeling.checkpoints.google_tf1 import load_google_checkpoint, save_google_checkpoint
from modeling.checkpoints.huggingface import load_hf_config, load_huggingface_checkpoint
from modeling.checkpoints.tf2 import new_checkpoint, restore_model

__all__ = [
    "BertCheckpointing", "BertConfig", "CheckpointError", "CheckpointNotFoundError", "ConfigError",
    "INPUT_NAMES", "KERNELS", "LoadReport", "PRESETS", "build_classifier", "build_encoder",
    "build_pretraining_model", "build_squad_model", "current_kernels", "detect_format",
    "kernels_scope", "load_checkpoint", "load_config", "load_google_checkpoint", "load_hf_config",
    "load_huggingface_checkpoint", "masked_lm_loss", "new_checkpoint", "next_sentence_loss",
    "resolve_config", "restore_model", "save_config", "save_google_checkpoint", "set_kernels",
]
