"""Learning-rate schedules: Google BERT's (linear warmup, then linear decay to zero) and a
constant one (the official TinyBERT's intermediate stage)."""

import tensorflow as tf
import tf_keras

WARMUP_LINEAR, CONSTANT = 'warmup_linear', 'constant'
SCHEDULES = (WARMUP_LINEAR, CONSTANT)


class WarmupPolynomialDecay(tf_keras.optimizers.schedules.LearningRateSchedule):
  """`optimization.create_optimizer`'s schedule as a Keras schedule.

  The decay is computed first from the global step (polynomial, power 1.0, to
  `end_learning_rate` over `num_train_steps`, no cycling); while
  step < `num_warmup_steps` the warmup value init_lr * step / num_warmup_steps
  overrides it, as in Google's code.
  """

  def __init__(self, initial_learning_rate, num_train_steps, num_warmup_steps=0,
               power=1.0, end_learning_rate=0.0, name=None):
    super().__init__()
    if num_train_steps <= 0:
      raise ValueError(
          f'num_train_steps must be positive, got {num_train_steps}')
    if num_warmup_steps < 0:
      raise ValueError(
          f'num_warmup_steps must be >= 0, got {num_warmup_steps}')
    self.initial_learning_rate = initial_learning_rate
    self.num_train_steps = num_train_steps
    self.num_warmup_steps = num_warmup_steps
    self.power = power
    self.end_learning_rate = end_learning_rate
    self.name = name

  def __call__(self, step):
    with tf.name_scope(self.name or 'WarmupPolynomialDecay'):
      init_lr = tf.constant(self.initial_learning_rate, tf.float32)
      step = tf.cast(step, tf.float32)
      decay_steps = float(self.num_train_steps)
      fraction = tf.minimum(step, decay_steps) / decay_steps
      decayed = ((init_lr - self.end_learning_rate) *
                 tf.pow(1.0 - fraction, self.power) + self.end_learning_rate)
      if not self.num_warmup_steps:
        return decayed
      warmup = init_lr * step / float(self.num_warmup_steps)
      # Google compares the integer step with the integer warmup length.
      return tf.where(step < float(self.num_warmup_steps), warmup, decayed)

  def get_config(self):
    return {
        'initial_learning_rate': self.initial_learning_rate,
        'num_train_steps': self.num_train_steps,
        'num_warmup_steps': self.num_warmup_steps,
        'power': self.power,
        'end_learning_rate': self.end_learning_rate,
        'name': self.name,
    }


def create_schedule(name, init_lr, num_train_steps, num_warmup_steps):
  """`name`'s schedule: WARMUP_LINEAR (Google's), or CONSTANT: init_lr at every step, no
  warmup (the official TinyBERT's 'none')."""
  if name == WARMUP_LINEAR:
    return WarmupPolynomialDecay(init_lr, num_train_steps, num_warmup_steps)
  if name == CONSTANT:
    # A decay of power 0: (1 - fraction)^0 = 1 at every step, the last one included.
    return WarmupPolynomialDecay(init_lr, num_train_steps, 0, power=0.0)
  raise ValueError(f'schedule must be one of {SCHEDULES}, got {name!r}')
