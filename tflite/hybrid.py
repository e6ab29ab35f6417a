"""Fully connected ops of a .tflite rewritten to TFLite's hybrid (dynamic-range) form.

A hybrid FULLY_CONNECTED holds int8 weights, one symmetric scale per output channel, and
takes and gives float32: the kernel quantizes each input row at run time (asymmetrically:
its own scale and zero point) and rescales the int32 sums. `--quantize=int8` uses it for the
feed-forward output projections, whose outputs have a few features a hundred times larger
than the rest (one int8 step of their range is about the size of a typical feature); float in
and out, they keep the residual stream's resolution at int8 matmul cost. The converter
quantizes a model either fully (with a float denylist) or dynamically, not some ops one way
and the rest the other, and has no public API for it: this rewrites the converted flatbuffer
with TFLite's own schema module.
"""

import flatbuffers
import numpy as np
from tensorflow.lite.python import schema_py_generated as schema_fb


def _fully_connected_codes(model):
  return {i for i, code in enumerate(model.operatorCodes)
          if max(code.builtinCode, code.deprecatedBuiltinCode)
          == schema_fb.BuiltinOperator.FULLY_CONNECTED}


def _quantize_weights(model, tensor, done):
  """Turns the float32 weight tensor [out, in] into int8 with a scale per output channel;
  a buffer shared by several tensors (signatures) is quantized once (`done`: buffer ->
  scales)."""
  if tensor.buffer not in done:
    buffer = model.buffers[tensor.buffer]
    weights = np.frombuffer(bytes(bytearray(buffer.data)), np.float32).reshape(tensor.shape)
    scales = np.maximum(np.abs(weights).max(axis=1), 1e-12) / 127.0  # [out]
    quantized = np.clip(np.round(weights / scales[:, None]), -127, 127).astype(np.int8)
    buffer.data = np.frombuffer(quantized.tobytes(), np.uint8)
    done[tensor.buffer] = scales.astype(np.float32)
  quantization = schema_fb.QuantizationParametersT()
  quantization.scale = done[tensor.buffer].tolist()
  quantization.zeroPoint = [0] * len(quantization.scale)
  quantization.quantizedDimension = 0
  tensor.type = schema_fb.TensorType.INT8
  tensor.quantization = quantization


def hybrid_fully_connected(content, output_names):
  """The .tflite bytes `content` with every float FULLY_CONNECTED whose output tensor is
  named in `output_names` in the hybrid form; RuntimeError if some subgraph has none."""
  model = schema_fb.ModelT.InitFromObj(schema_fb.Model.GetRootAsModel(content, 0))
  codes, done, missed = _fully_connected_codes(model), {}, []
  for graph in model.subgraphs:
    rewritten = 0
    for op in graph.operators:
      if op.opcodeIndex not in codes:
        continue
      inputs, weights = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]]
      if (graph.tensors[op.outputs[0]].name.decode("utf-8") not in output_names
          or inputs.type != schema_fb.TensorType.FLOAT32
          or weights.type != schema_fb.TensorType.FLOAT32):
        continue
      _quantize_weights(model, weights, done)
      op.builtinOptions.asymmetricQuantizeInputs = True
      rewritten += 1
    missed += [] if rewritten else [graph.name.decode("utf-8")]
  if missed:
    raise RuntimeError(f"no float fully connected op to make hybrid in {', '.join(missed)}")
  builder = flatbuffers.Builder(len(content))
  builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
  return bytes(builder.Output())
