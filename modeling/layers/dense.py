"""Dense layers and bias adds whose bias gradient runs on the matmul kernels.

A bias gradient is a column sum of the output gradient over every row. XLA on
CPU fuses such a sum with the element-wise work that produces its operand and
splits it into `reduce-window` loops, which stride through memory a row apart
per element and take as long as the layer's matmuls. As a matrix product
`ones @ rows` the operand is materialised once and the sum is a GEMM.
"""

import tensorflow as tf
import tf_keras as keras

from modeling.kernels import current_kernels


def _sum_rows(x):
  """float32 [C]: the sum of x [..., C] over all leading axes, as a matrix product.

  Two rows of ones, not one: XLA on CPU fuses a small matrix-vector product
  with its operand's producers into an unvectorised loop.
  """
  rows = tf.cast(tf.reshape(x, [-1, tf.shape(x)[-1]]), tf.float32)  # [N, C]
  return tf.matmul(tf.ones([2, tf.shape(rows)[0]], tf.float32), rows)[0]  # [2, C] -> [C]


def add_bias(x, bias, kernels):
  """x [..., C] + bias [C], as `tf.nn.bias_add`; for the "fused" family the bias
  gradient is a matrix product (`_sum_rows`), for "keras" TensorFlow's column sum.

  kernels: the calling layer's family (`layer.kernels`): this runs when a model
  is traced, which may be outside the `modeling.kernels` setting it was built under.
  """
  if kernels == "keras":
    return tf.nn.bias_add(x, bias)

  @tf.custom_gradient
  def add(x, bias):
    def grad(dy):
      return dy, tf.cast(_sum_rows(dy), bias.dtype)
    return tf.nn.bias_add(x, bias), grad
  # A tensor, not a variable: the gradient then flows back through the read
  # (and any autocast) to the variable.
  return add(x, tf.convert_to_tensor(bias))


class MatmulDense(keras.layers.Dense):
  """Keras' `Dense` (same weights and names) as one 2-D matmul [N, in] x [in, out],
  the bias added by `add_bias` (gradient as a matrix product).

  Call with `activation=f` to apply f instead of the layer's own activation:
  the transformer layer picks its GELU per call (compiled only in training).
  Either is applied to the 2-D rows right after the bias, where TensorFlow's
  CPU graph optimizer fuses matmul, bias and GELU into one kernel (applied
  after the reshape back, it runs as separate element-wise passes).
  """

  def call(self, inputs, activation=None):
    activation = activation or self.activation
    inputs = tf.cast(inputs, self.compute_dtype)
    rows = tf.reshape(inputs, [-1, self.kernel.shape[0]])  # [N, in]
    outputs = tf.matmul(rows, self.kernel)  # [N, units]
    if self.use_bias:
      outputs = add_bias(outputs, self.bias, "fused")
    if activation is not None:
      outputs = activation(outputs)
    outputs = tf.reshape(outputs, tf.concat([tf.shape(inputs)[:-1], [self.units]], 0))
    outputs.set_shape(inputs.shape[:-1].concatenate([self.units]))  # [..., units]
    return outputs


def dense_layer(units, **kwargs):
  """A dense layer: `MatmulDense` for the "fused" kernels, Keras' `Dense` for "keras"
  (same variables; `modeling.kernels`); kwargs as `keras.layers.Dense`'s."""
  layer_class = MatmulDense if current_kernels() == "fused" else keras.layers.Dense
  return layer_class(units, **kwargs)
