"""Dense layers and bias adds whose bias gradient runs on the matmul kernels.

A bias gradient is a column sum of the output gradient over every row. XLA on
CPU fuses such a sum with the element-wise work that produces its operand and
splits it into `reduce-window` loops; over a [32, 128, 1024] intermediate
gradient that loop strides 4 KB per element and took as long as the layer's
matmuls (mini BERT XLA step: about 110 ms of 1,400). As a matrix product
`ones @ rows` the operand is materialised once and the sum is a GEMM.
"""

import tensorflow as tf
import tf_keras as keras


def sum_rows(x):
  """float32 [C]: the sum of x [..., C] over all leading axes, as a matrix product.

  Two rows of ones, not one: XLA on CPU fuses a matrix-vector product under
  16 KB with its operand's producers into an unvectorised loop (13 ms instead
  of 2 for a mini BERT's last-layer [672, 1024] bias gradient).
  """
  rows = tf.cast(tf.reshape(x, [-1, tf.shape(x)[-1]]), tf.float32)  # [N, C]
  return tf.matmul(tf.ones([2, tf.shape(rows)[0]], tf.float32), rows)[0]  # [2, C] -> [C]


def bias_add(x, bias):
  """x [..., C] + bias [C], as `tf.nn.bias_add`, with the bias gradient from `sum_rows`."""

  @tf.custom_gradient
  def add(x, bias):
    def grad(dy):
      return dy, tf.cast(sum_rows(dy), bias.dtype)
    return tf.nn.bias_add(x, bias), grad
  # A tensor, not a variable: the gradient then flows back through the read
  # (and any autocast) to the variable.
  return add(x, tf.convert_to_tensor(bias))


class Dense(keras.layers.Dense):
  """Keras' `Dense` (same weights and names) as one 2-D matmul [N, in] x [in, out],
  the bias added by `bias_add`."""

  def call(self, inputs):
    inputs = tf.cast(inputs, self.compute_dtype)
    rows = tf.reshape(inputs, [-1, self.kernel.shape[0]])  # [N, in]
    outputs = tf.matmul(rows, self.kernel)  # [N, units]
    if self.use_bias:
      outputs = bias_add(outputs, self.bias)
    if self.activation is not None:
      outputs = self.activation(outputs)
    outputs = tf.reshape(outputs, tf.concat([tf.shape(inputs)[:-1], [self.units]], 0))
    outputs.set_shape(inputs.shape[:-1].concatenate([self.units]))  # [..., units]
    return outputs
