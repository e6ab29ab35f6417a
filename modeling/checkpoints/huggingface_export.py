"""export_huggingface.py's work: any checkpoint we read -> a directory transformers loads.

The directory holds what `from_pretrained` reads for a BERT model and its
tokenizer: `config.json`, `model.safetensors`, `vocab.txt`,
`tokenizer_config.json` and `special_tokens_map.json`. The model class is the
one for the heads the checkpoint holds (`huggingface.ARCHITECTURES`): none
gives `BertModel`, Google's pre-training heads `BertForPreTraining`,
run_classifier's layer `BertForSequenceClassification` (labels from the
`label_list.json` beside the checkpoint) and run_squad's `BertForQuestionAnswering`.
"""

import json
import os

from absl import logging

from classification import labels as labels_lib
from cli import FlagError
import fileio
from fileio import filesystem
from modeling.checkpoints import auto, huggingface
from modeling.checkpoints import names as names_lib
from modeling.checkpoints.assign import CheckpointError
from modeling.classifier import build_classifier
from modeling.encoder import build_encoder
from modeling.heads import build_pretraining_model
from modeling.kernels import kernels_scope
from modeling.squad import build_squad_model
import tokenization

VOCAB_NAME = "vocab.txt"
TOKENIZER_CONFIG_NAME = "tokenizer_config.json"
SPECIAL_TOKENS_NAME = "special_tokens_map.json"
OUTPUT_FILES = (huggingface.CONFIG_NAME, huggingface.WEIGHTS_NAME, VOCAB_NAME,
                TOKENIZER_CONFIG_NAME, SPECIAL_TOKENS_NAME)
# HF BertTokenizer's special tokens (its argument names), Google's strings.
SPECIAL_TOKENS = {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]",
                  "cls_token": "[CLS]", "mask_token": "[MASK]"}


def _checkpoint_dir(path):
  """The directory holding a checkpoint given as a directory, a prefix or a file."""
  path = os.fspath(path).rstrip("/")
  return path if filesystem.isdir(path) else os.path.dirname(path) or "."


def _same_dir(a, b):
  if filesystem.is_local(a) and filesystem.is_local(b):
    return os.path.realpath(a) == os.path.realpath(b)
  return a.rstrip("/") == b.rstrip("/")


def check_output_dir(output_dir, init_checkpoint, inputs, overwrite):
  """Refuses, before any work, an output_dir whose files cannot be written as asked.

  output_dir may be new or hold other files; the files the export writes
  (OUTPUT_FILES) may exist only with `overwrite`, and none may be an input
  (inputs: {flag: path}). The checkpoint's own directory is refused even
  with `overwrite`: a model.safetensors there would change what it holds.
  """
  if filesystem.exists(output_dir) and not filesystem.isdir(output_dir):
    raise FlagError(f"--output_dir {output_dir!r} is a file, not a directory")
  if _same_dir(output_dir, _checkpoint_dir(init_checkpoint)):
    raise FlagError(f"--output_dir {output_dir!r} is the directory of --init_checkpoint: "
                    "writing there would replace or change the checkpoint; choose another "
                    "directory")
  if filesystem.isdir(output_dir):
    fileio.check_outputs([os.path.join(output_dir, name) for name in OUTPUT_FILES], overwrite,
                         inputs)


def checkpoint_heads(init_checkpoint):
  """(our head layers, {Google name: shape}) of a checkpoint; CheckpointError for heads no
  HF class holds together."""
  shapes = auto.checkpoint_shapes(init_checkpoint)
  heads = frozenset(filter(None, map(names_lib.head_of, shapes)))
  if heads not in huggingface.ARCHITECTURES:
    raise CheckpointError(
        f"{init_checkpoint} holds the heads {sorted(names_lib.HEAD_LABELS[h] for h in heads)}, "
        "which no HuggingFace BERT class holds together")
  return heads, shapes


def classifier_labels(init_checkpoint, num_labels):
  """(label names in id order, problem_type) for run_classifier's layer of num_labels outputs.

  The names come from the label_list.json beside the checkpoint (as run_classifier
  and task_distill write it), else are HF's defaults LABEL_0, ... (one output: regression).
  """
  path = os.path.join(_checkpoint_dir(init_checkpoint), labels_lib.LABEL_LIST_FILE)
  if not filesystem.exists(path):
    logging.warning("no %s beside %s: labels are named LABEL_0..LABEL_%d", labels_lib.LABEL_LIST_FILE,
                    init_checkpoint, num_labels - 1)
    labels, is_regression = [f"LABEL_{i}" for i in range(num_labels)], num_labels == 1
  else:
    labels, is_regression = labels_lib.load_label_list(path)
    if is_regression:
      labels = ["LABEL_0"]
    if len(labels) != num_labels:
      raise CheckpointError(f"{path} has {len(labels)} labels but the classifier layer of "
                            f"{init_checkpoint} has {num_labels} outputs")
  return labels, "regression" if is_regression else "single_label_classification"


def _build_model(config, heads, shapes):
  """The model whose variables are the checkpoint's weights (stock Keras kernels)."""
  with kernels_scope("keras"):
    if "classifier" in heads:
      return build_classifier(config, shapes["output_weights"][0])
    if "cls_squad" in heads:
      return build_squad_model(config)
    if heads:
      return build_pretraining_model(config)
    return build_encoder(config)


def tokenizer_files(vocab, do_lower_case, max_length):
  """{file name: text} of the tokenizer files HF's BertTokenizer(Fast) reads.

  vocab: {token: id}, as `tokenization.load_vocab` reads it; written one token a
  line, so ids are FullTokenizer's. HF strips accents when it lower-cases
  (strip_accents None), as Google's BasicTokenizer does.
  """
  missing = [token for token in SPECIAL_TOKENS.values() if token not in vocab]
  if missing:
    raise tokenization.VocabError(
        f"the vocabulary lacks BERT's special tokens {', '.join(missing)}: HF's tokenizer "
        "would give them ids beyond the model's vocabulary")
  config = {"tokenizer_class": "BertTokenizer", "do_lower_case": do_lower_case,
            "do_basic_tokenize": True, "never_split": None, "tokenize_chinese_chars": True,
            "strip_accents": None, "model_max_length": max_length, **SPECIAL_TOKENS}
  return {VOCAB_NAME: "".join(token + "\n" for token in vocab),
          TOKENIZER_CONFIG_NAME: json.dumps(config, indent=2) + "\n",
          SPECIAL_TOKENS_NAME: json.dumps(SPECIAL_TOKENS, indent=2) + "\n"}


def write_files(output_dir, contents):
  """Writes {file name: str or bytes} into output_dir: every file under a temporary name first,
  then all renamed into place, so that a failure leaves no new file half-written."""
  outputs = []
  try:
    for name, content in contents.items():
      outputs.append(fileio.AtomicFile(os.path.join(output_dir, name),
                                       "wb" if isinstance(content, bytes) else "w"))
      outputs[-1].file.write(content)
  except BaseException:
    for output in outputs:
      output.abort()
    raise
  for i, output in enumerate(outputs):
    try:
      output.commit()
    except BaseException:
      for rest in outputs[i + 1:]:
        rest.abort()
      raise


def export_huggingface(init_checkpoint, output_dir, vocab_file, do_lower_case=None,
                       bert_config_file=None, overwrite=False):
  """Writes init_checkpoint as an HF BERT directory (module doc) into output_dir.

  init_checkpoint: any checkpoint `modeling.load_checkpoint` reads (a
  run_classifier / run_squad / task_distill output_dir included); its config
  is bert_config_file or the one stored with it. do_lower_case None: from the
  vocab file's path. Existing files of the export are replaced only with
  `overwrite`. Returns the HF class written.
  """
  for flag, value in (("--init_checkpoint", init_checkpoint), ("--output_dir", output_dir),
                      ("--vocab_file", vocab_file)):
    if not value:
      raise FlagError(f"{flag} is required")
  init_checkpoint, output_dir = os.fspath(init_checkpoint), os.fspath(output_dir)
  kind, _ = auto.detect_format(init_checkpoint)  # a missing checkpoint is named first
  check_output_dir(output_dir, init_checkpoint,
                   {"--vocab_file": vocab_file, "--bert_config_file": bert_config_file},
                   overwrite)
  do_lower_case = tokenization.resolve_do_lower_case(do_lower_case, vocab_file)
  tokenization.validate_case_matches_checkpoint(do_lower_case, init_checkpoint)
  config = auto.resolve_config(bert_config_file, init_checkpoint)
  tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case)
  tokenizer.check_vocab_size(config.vocab_size, bert_config_file or init_checkpoint)
  files = tokenizer_files(tokenizer.vocab, do_lower_case, config.max_position_embeddings)
  heads, shapes = checkpoint_heads(init_checkpoint)
  architecture = huggingface.ARCHITECTURES[heads]
  labels = problem_type = None
  if "classifier" in heads:
    labels, problem_type = classifier_labels(init_checkpoint, shapes["output_weights"][0])
  logging.info("Reading %s (%s) as %s", init_checkpoint, kind, architecture)
  model = _build_model(config, heads, shapes)
  auto.load_checkpoint(model, init_checkpoint)
  tensors = huggingface.huggingface_tensors(model, heads)
  hf_config = huggingface.config_to_dict(config, architecture, tokenizer.vocab["[PAD]"], labels,
                                         problem_type)
  files[huggingface.CONFIG_NAME] = json.dumps(hf_config, indent=2) + "\n"
  files[huggingface.WEIGHTS_NAME] = huggingface.safetensors_bytes(tensors)
  write_files(output_dir, files)
  logging.info("Wrote %s (%s, %d tensors, hidden_act %r) to %s", architecture,
               ", ".join(sorted(files)), len(tensors), hf_config["hidden_act"], output_dir)
  return architecture
