"""The PyTorch / ONNX Runtime peers of `bench/tflite.py`, on the same fine-tuned weights.

From export_huggingface.py's directory of the classifier (--hf_dir):
  hf_fp32:    HF's fast tokenizer + `BertForSequenceClassification`, float32;
  torch_int8: the same model through `torch.ao.quantization.quantize_dynamic`
              (int8 weights of every `nn.Linear`, activations quantized per call);
  ort_int8:   the same model exported by `torch.onnx.export`, quantized by ONNX
              Runtime's `quantize_dynamic` with optimum's AVX-512 VNNI settings (int8
              weights, activations quantized per call), run by ONNX Runtime
              with the fast tokenizer in front.
Every call tokenizes the raw rows (truncation to --max_seq_length, padding to the
batch's longest row) inside the timed region. `--prepare` writes the ONNX files
into --onnx_dir; `--measure=KIND` measures one peer in this process with
--threads threads and prints one JSON line (as `tflite.py`'s children do).
Needs bench/requirements.txt (torch, transformers, onnx, onnxruntime).
"""

import argparse
import json
import os

import numpy as np

from tflite import TASKS, figures, read_dev  # bench/

KINDS = ("hf_fp32", "torch_int8", "ort_int8")
ONNX_QUANTIZED = "model_quantized.onnx"


def prepare(hf_dir, onnx_dir):
  """The ONNX export of hf_dir (torch.onnx, dynamic batch and length; optimum's exporter does
  not run on transformers 5) and ONNX Runtime's dynamic int8 quantization with the settings
  of optimum's `AutoQuantizationConfig.avx512_vnni(is_static=False, per_channel=False)` (int8
  symmetric weights, uint8 activations, no reduced range), called directly: the optimum
  package that wraps it needs transformers < 4.58."""
  # pylint: disable=import-outside-toplevel
  import torch
  import transformers
  from onnxruntime.quantization import QuantType, quantize_dynamic
  os.makedirs(onnx_dir, exist_ok=True)
  model = transformers.BertForSequenceClassification.from_pretrained(
      hf_dir, attn_implementation="eager").eval()
  names = ["input_ids", "attention_mask", "token_type_ids"]
  example = tuple(torch.ones([1, 8], dtype=torch.long) for _ in names)
  axes = {name: {0: "batch", 1: "sequence"} for name in names}
  torch.onnx.export(model, example, os.path.join(onnx_dir, "model.onnx"), input_names=names,
                    output_names=["logits"], dynamic_axes={**axes, "logits": {0: "batch"}},
                    opset_version=17, dynamo=False)
  quantize_dynamic(os.path.join(onnx_dir, "model.onnx"), os.path.join(onnx_dir, ONNX_QUANTIZED),
                   per_channel=False, reduce_range=False, weight_type=QuantType.QInt8)


def measure(args):
  """One peer's figures in this process (threads: torch's and ONNX Runtime's pools)."""
  import torch  # pylint: disable=import-outside-toplevel
  import transformers  # pylint: disable=import-outside-toplevel
  torch.set_num_threads(args.threads)
  torch.set_num_interop_threads(1)
  rows, gold = read_dev(args.task)
  is_pair = TASKS[args.task][1][1] is not None
  tokenizer = transformers.BertTokenizerFast.from_pretrained(args.hf_dir)
  with open(os.path.join(args.hf_dir, "config.json"), encoding="utf-8") as f:
    id2label = {int(i): label for i, label in json.load(f)["id2label"].items()}

  def encode(batch, tensors):
    texts_b = [b for _, b in batch] if is_pair else None
    return tokenizer([a for a, _ in batch], texts_b, truncation="longest_first",
                     max_length=args.max_seq_length, padding=True, return_tensors=tensors)

  if args.measure == "ort_int8":
    import onnxruntime  # pylint: disable=import-outside-toplevel
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    path = os.path.join(args.onnx_dir, ONNX_QUANTIZED)
    session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}

    def call(batch):
      encoded = encode(batch, "np")
      logits = session.run(["logits"], {k: v for k, v in encoded.items() if k in names})[0]
      return [id2label[i] for i in logits.argmax(-1)]
    size = os.path.getsize(path)
  else:
    model = transformers.BertForSequenceClassification.from_pretrained(args.hf_dir).eval()
    if args.measure == "torch_int8":
      model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
      path = os.path.join(args.onnx_dir, "torch_int8.pt")
      torch.save(model.state_dict(), path)
      size = os.path.getsize(path)
    else:
      size = os.path.getsize(os.path.join(args.hf_dir, "model.safetensors"))

    def call(batch):
      with torch.inference_mode():
        logits = model(**encode(batch, "pt")).logits
      return [id2label[i] for i in np.asarray(logits.argmax(-1))]
  print(json.dumps({**figures(call, rows, None if args.skip_accuracy else gold, args.calls,
                               args.warmup),
                    "size_mb": size / 1e6}), flush=True)


def main():
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--hf_dir", required=True)
  parser.add_argument("--onnx_dir", required=True)
  parser.add_argument("--prepare", action="store_true")
  parser.add_argument("--measure", choices=KINDS)
  parser.add_argument("--task", choices=sorted(TASKS), default="sst-2")
  parser.add_argument("--max_seq_length", type=int, default=128)
  parser.add_argument("--threads", type=int, default=2)
  parser.add_argument("--calls", type=int, default=200)
  parser.add_argument("--warmup", type=int, default=20)
  parser.add_argument("--skip_accuracy", action="store_true", help="latency only")
  args = parser.parse_args()
  if args.prepare:
    prepare(args.hf_dir, args.onnx_dir)
  if args.measure:
    measure(args)


if __name__ == "__main__":
  main()
