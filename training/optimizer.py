"""AdamWeightDecay (Google BERT's optimizer) and LAMB, as tf-keras optimizers.

Both are legacy-style `tf_keras.optimizers.legacy.Optimizer` subclasses: that
API aggregates gradients across replicas before `global_clipnorm` clipping,
works with the legacy `LossScaleOptimizer` and checkpoints its slot variables
("m" and "v") with the optimizer. AdamWeightDecay runs on TensorFlow's fused
Adam kernel, its weight decay a separate in-place step.
"""

import re

import tensorflow as tf
import tf_keras

from training import schedule as schedule_lib

# Google's `create_optimizer` values.
DEFAULT_WEIGHT_DECAY_RATE = 0.01
DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY = ('LayerNorm', 'layer_norm', 'bias')
DEFAULT_CLIP_NORM = 1.0
OPTIMIZERS = ('adamw', 'adamw_corrected', 'lamb')


class AdamWeightDecay(tf_keras.optimizers.legacy.Optimizer):
  """Adam with decoupled weight decay and no bias correction, as Google's.

  Per variable: m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g^2;
  update = m / (sqrt(v) + eps) (+ weight_decay_rate * param unless the
  variable name matches one of `exclude_from_weight_decay`, searched as
  regular expressions); param -= lr * update. With `bias_correction`, the
  update is PyTorch's AdamW (HF's fine-tuning optimizer) exactly:
  (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps) at Adam's step t. Google's
  omits the correction: its early updates are up to 3x larger, still 2.5x
  after 180 steps. (Keras' Adam corrects too, but adds eps to sqrt(v) before
  the correction: early in training its eps is up to 1/sqrt(1 - b2) = 32x
  PyTorch's, which slows the first hundreds of steps of a fine-tuning.)
  """

  def __init__(self, learning_rate=0.001,
               weight_decay_rate=DEFAULT_WEIGHT_DECAY_RATE,
               beta_1=0.9, beta_2=0.999, epsilon=1e-6,
               exclude_from_weight_decay=DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY,
               name='AdamWeightDecay', bias_correction=False, **kwargs):
    super().__init__(name, **kwargs)
    self.bias_correction = bias_correction
    self._set_hyper('learning_rate', learning_rate)
    self._set_hyper('beta_1', beta_1)
    self._set_hyper('beta_2', beta_2)
    self.epsilon = epsilon
    self.weight_decay_rate = weight_decay_rate
    self.exclude_from_weight_decay = tuple(exclude_from_weight_decay or ())

  def _create_slots(self, var_list):
    for var in var_list:
      self.add_slot(var, 'm')
    for var in var_list:
      self.add_slot(var, 'v')

  def _prepare_local(self, var_device, var_dtype, apply_state):
    super()._prepare_local(var_device, var_dtype, apply_state)
    coefficients = apply_state[(var_device, var_dtype)]
    coefficients['beta_1'] = tf.identity(self._get_hyper('beta_1', var_dtype))
    coefficients['beta_2'] = tf.identity(self._get_hyper('beta_2', var_dtype))

  def use_weight_decay(self, var_name):
    """Whether the variable called `var_name` is decayed (Google's rule)."""
    if not self.weight_decay_rate:
      return False
    return not any(re.search(pattern, var_name)
                   for pattern in self.exclude_from_weight_decay)

  def _coefficients(self, var, apply_state):
    var_device, var_dtype = var.device, var.dtype.base_dtype
    return ((apply_state or {}).get((var_device, var_dtype)) or
            self._fallback_apply_state(var_device, var_dtype))

  def _resource_apply_dense(self, grad, var, apply_state=None):
    coefficients = self._coefficients(var, apply_state)
    lr = coefficients['lr_t']
    # param -= lr * (adam + decay * param) as two in-place updates: the decay
    # (with the old param), then TensorFlow's fused Adam kernel (one pass over
    # param, m, v), whose bias correction is off with beta powers of 0. With
    # the correction on, the kernel computes
    # lr * sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + epsilon), which is
    # PyTorch's update when epsilon = eps * sqrt(1 - b2^t).
    dtype = var.dtype.base_dtype
    epsilon = tf.cast(self.epsilon, dtype)
    decay = []
    if self.use_weight_decay(var.name):
      decay.append(var.assign_sub(lr * self.weight_decay_rate * var))
    with tf.control_dependencies(decay):
      if self.bias_correction:
        step = tf.cast(self.iterations + 1, dtype)
        beta1_power = tf.pow(coefficients['beta_1'], step)
        beta2_power = tf.pow(coefficients['beta_2'], step)
        epsilon *= tf.sqrt(1.0 - beta2_power)
      else:
        beta1_power = beta2_power = tf.zeros([], dtype)
      return tf.raw_ops.ResourceApplyAdam(
          var=var.handle, m=self.get_slot(var, 'm').handle,
          v=self.get_slot(var, 'v').handle, beta1_power=beta1_power, beta2_power=beta2_power,
          lr=lr, beta1=coefficients['beta_1'], beta2=coefficients['beta_2'],
          epsilon=epsilon, grad=grad)

  def _resource_apply_sparse(self, grad, var, indices, apply_state=None):
    # Google's update is dense: every row's moments decay every step.
    dense = tf.math.unsorted_segment_sum(grad, indices, tf.shape(var)[0])
    return self._resource_apply_dense(dense, var, apply_state)

  def get_config(self):
    config = super().get_config()
    config.update({
        'learning_rate': self._serialize_hyperparameter('learning_rate'),
        'beta_1': self._serialize_hyperparameter('beta_1'),
        'beta_2': self._serialize_hyperparameter('beta_2'),
        'epsilon': self.epsilon,
        'weight_decay_rate': self.weight_decay_rate,
        'exclude_from_weight_decay': list(self.exclude_from_weight_decay),
        'bias_correction': self.bias_correction,
    })
    return config


class Lamb(AdamWeightDecay):
  """LAMB (You et al., 2019): Adam with bias correction, decoupled weight decay
  and a layer-wise trust ratio ||param|| / ||update|| (1 when either norm is 0).

  The trust ratio is skipped for variables matching
  `exclude_from_layer_adaptation` (defaults to the weight-decay exclusions).
  """

  def __init__(self, learning_rate=0.001,
               weight_decay_rate=DEFAULT_WEIGHT_DECAY_RATE,
               beta_1=0.9, beta_2=0.999, epsilon=1e-6,
               exclude_from_weight_decay=DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY,
               exclude_from_layer_adaptation=None, name='Lamb', **kwargs):
    super().__init__(learning_rate, weight_decay_rate, beta_1, beta_2, epsilon,
                     exclude_from_weight_decay, name, **kwargs)
    if exclude_from_layer_adaptation is None:
      exclude_from_layer_adaptation = self.exclude_from_weight_decay
    self.exclude_from_layer_adaptation = tuple(exclude_from_layer_adaptation)

  def _prepare_local(self, var_device, var_dtype, apply_state):
    super()._prepare_local(var_device, var_dtype, apply_state)
    # The step count for the bias correction (AdamWeightDecay has none).
    apply_state[(var_device, var_dtype)]['step'] = tf.cast(
        self.iterations + 1, var_dtype)

  def _trust_ratio(self, var, update):
    """||param|| / ||update||, 1 when either is 0 or the variable is excluded."""
    if any(re.search(pattern, var.name)
           for pattern in self.exclude_from_layer_adaptation):
      return 1.0
    var_norm = tf.norm(var)
    update_norm = tf.norm(update)
    return tf.where(var_norm > 0.0,
                    tf.where(update_norm > 0.0, var_norm / update_norm, 1.0),
                    1.0)

  def _resource_apply_dense(self, grad, var, apply_state=None):
    coefficients = self._coefficients(var, apply_state)
    beta_1, beta_2 = coefficients['beta_1'], coefficients['beta_2']
    step = coefficients['step']
    m = self.get_slot(var, 'm')
    v = self.get_slot(var, 'v')
    next_m = beta_1 * m + (1.0 - beta_1) * grad
    next_v = beta_2 * v + (1.0 - beta_2) * tf.square(grad)
    m_hat = next_m / (1.0 - tf.pow(beta_1, step))
    v_hat = next_v / (1.0 - tf.pow(beta_2, step))
    update = m_hat / (tf.sqrt(v_hat) + self.epsilon)
    if self.use_weight_decay(var.name):
      update += self.weight_decay_rate * var
    step_size = coefficients['lr_t'] * self._trust_ratio(var, update)
    return tf.group(var.assign_sub(step_size * update), m.assign(next_m),
                    v.assign(next_v))

  def get_config(self):
    config = super().get_config()
    config['exclude_from_layer_adaptation'] = list(
        self.exclude_from_layer_adaptation)
    return config


def create_optimizer(
    init_lr, num_train_steps, num_warmup_steps, optimizer_type='adamw',
    weight_decay_rate=DEFAULT_WEIGHT_DECAY_RATE,
    exclude_from_weight_decay=DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY,
    clip_norm=DEFAULT_CLIP_NORM, schedule=schedule_lib.WARMUP_LINEAR):
  """Google's `optimization.create_optimizer`: schedule + optimizer + clipping.

  `schedule`: one of `schedule_lib.SCHEDULES` (Google's warmup and linear decay by default).
  Gradients are clipped to global norm `clip_norm` after the cross-replica sum
  (None disables clipping).
  """
  learning_rate = schedule_lib.create_schedule(
      schedule, init_lr, num_train_steps, num_warmup_steps)
  if optimizer_type not in OPTIMIZERS:
    raise ValueError(f'optimizer_type must be one of {OPTIMIZERS}, '
                     f'got {optimizer_type!r}')
  extra = {'bias_correction': True} if optimizer_type == 'adamw_corrected' else {}
  cls = Lamb if optimizer_type == 'lamb' else AdamWeightDecay
  return cls(learning_rate=learning_rate, weight_decay_rate=weight_decay_rate,
             exclude_from_weight_decay=exclude_from_weight_decay,
             global_clipnorm=clip_norm, **extra)
