"""Training-loop throughput: training.loop.Trainer vs tf-keras Model.fit.

Same model (a 4-layer MLP with LayerNorm), same optimizer (AdamWeightDecay with
the warmup/decay schedule and clipping), same synthetic data, one device.
Prints examples/s of the timed steps (after a warm-up run that traces) and our
ratio to Model.fit with the same steps_per_execution.

  python bench/bench_training_loop.py [--steps 600] [--batch_size 64]
"""

import argparse
import os
import sys
import tempfile
import time

# Run from anywhere: the repository root holds the `training` package.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# pylint: disable=wrong-import-position
import cli  # pylint: disable=unused-import  # our scripts' TensorFlow settings (oneDNN)
import tensorflow as tf
import tf_keras

from training import loop
from training import optimizer as optimizer_lib
from training import strategy as strategy_lib
# pylint: enable=wrong-import-position

WIDTH = 512


def model_fn():
  x = tf_keras.Input((WIDTH,), name='x')
  h = x
  for i in range(4):
    h = tf_keras.layers.Dense(WIDTH, activation='gelu', name=f'dense_{i}')(h)
    h = tf_keras.layers.LayerNormalization(name=f'LayerNorm_{i}')(h)
  return tf_keras.Model({'x': x}, tf_keras.layers.Dense(1, name='out')(h))


def dataset(batch_size):
  x = tf.random.stateless_normal([batch_size * 8, WIDTH], seed=[1, 2])
  y = tf.reduce_sum(x[:, :8], axis=1)
  return tf.data.Dataset.from_tensor_slices(
      ({'x': x}, y)).repeat().batch(batch_size).prefetch(2)


def ours(steps, batch_size, iterations_per_loop, use_xla):
  """Examples/s of Trainer.train over `steps` after `steps` of warm-up."""
  def dataset_fn(context):
    del context
    return dataset(batch_size).map(lambda f, y: dict(f, y=y))

  def loss_fn(features, outputs):
    return tf.reduce_mean(tf.square(outputs[:, 0] - features['y']))

  # Two log intervals: the second one's rate excludes tracing.
  trainer = loop.Trainer(
      strategy_lib.build_strategy('one_device'),
      loop.LoopOptions(tempfile.mkdtemp(), batch_size, 2 * steps,
                       save_checkpoints_steps=2 * steps, log_steps=steps,
                       iterations_per_loop=iterations_per_loop,
                       use_xla=use_xla),
      model_fn, lambda: optimizer_lib.create_optimizer(1e-4, 2 * steps, 10),
      loss_fn, dataset_fn)
  return trainer.train()['examples_per_second']


def keras_fit(steps, batch_size, steps_per_execution, use_xla):
  model = model_fn()
  model.compile(optimizer=optimizer_lib.create_optimizer(1e-4, 2 * steps, 10),
                loss='mse', steps_per_execution=steps_per_execution,
                jit_compile=use_xla)
  data = dataset(batch_size)
  model.fit(data, steps_per_epoch=steps, epochs=1, verbose=0)
  start = time.time()
  model.fit(data, steps_per_epoch=steps, epochs=1, verbose=0)
  return steps * batch_size / (time.time() - start)


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument('--steps', type=int, default=600)
  parser.add_argument('--batch_size', type=int, default=64)
  args = parser.parse_args()
  print(f'MLP 4x{WIDTH}, batch {args.batch_size}, {args.steps} timed steps, '
        f'{os.cpu_count()} CPUs')
  for per_loop, xla in ((1, False), (100, False), (100, True)):
    a = ours(args.steps, args.batch_size, per_loop, xla)
    b = keras_fit(args.steps, args.batch_size, per_loop, xla)
    print(f'iterations_per_loop={per_loop:<4} xla={xla!s:<5}: Trainer '
          f'{a:8.0f} ex/s, Model.fit {b:8.0f} ex/s, ratio {a / b:.2f}')


if __name__ == '__main__':
  main()
