"""tflite.hybrid: a float fully connected op rewritten to the hybrid form computes x @ W
to int8 precision (weights rounded per output channel, each input row quantized at run time),
and a subgraph without such an op is an error."""

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.lite.python import schema_py_generated as schema

from tflite.hybrid import hybrid_fully_connected


def _dense_model():
  """A float .tflite of y = x @ w ([4, 64] x [64, 32]), its weights, its output tensor's name."""
  w = np.random.default_rng(0).normal(size=(64, 32)).astype(np.float32)

  @tf.function(input_signature=[tf.TensorSpec([4, 64], tf.float32)])
  def dense(x):
    return tf.matmul(x, tf.constant(w))
  content = tf.lite.TFLiteConverter.from_concrete_functions(
      [dense.get_concrete_function()], dense).convert()
  model = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(content, 0))
  graph = model.subgraphs[0]
  (op,) = graph.operators
  return content, w, graph.tensors[op.outputs[0]].name.decode()


def _run(content, x):
  interpreter = tf.lite.Interpreter(model_content=content)
  interpreter.allocate_tensors()
  interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
  interpreter.invoke()
  return interpreter.get_tensor(interpreter.get_output_details()[0]["index"])


def test_hybrid_computes_the_product_to_int8_precision():
  content, w, output = _dense_model()
  hybrid = hybrid_fully_connected(content, {output})
  x = np.random.default_rng(1).normal(size=(4, 64)).astype(np.float32)
  x[0] *= 100  # one large row: per-row input scales keep the other rows' precision
  exact, got = x @ w, _run(hybrid, x)
  assert len(hybrid) < 0.5 * len(content)  # the weights as int8
  # Per row: |error| <= about one input step and one weight step over the row's products.
  error = np.abs(got - exact).max(axis=1) / np.abs(exact).max(axis=1)
  assert error.max() < 0.02, error  # measured 0.005-0.010
  assert not np.allclose(got, exact, rtol=1e-5, atol=1e-5)  # quantized, not float


def test_a_subgraph_without_a_matching_float_op_is_an_error():
  content, _, _ = _dense_model()
  with pytest.raises(RuntimeError, match="no float fully connected op to make hybrid in"):
    hybrid_fully_connected(content, {"no such tensor"})
