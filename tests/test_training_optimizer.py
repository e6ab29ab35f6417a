"""AdamWeightDecay, LAMB and the learning-rate schedule against numpy references
written from Google's `optimization.py` (and the LAMB paper)."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from training import optimizer as optimizer_lib
from training import schedule as schedule_lib


def google_learning_rate(step, init_lr, num_train_steps, num_warmup_steps):
  """Google's `create_optimizer` schedule, step by step in plain Python."""
  decayed = init_lr * (1.0 - min(step, num_train_steps) / num_train_steps)
  if step < num_warmup_steps:
    return init_lr * step / num_warmup_steps
  return decayed


def clip_by_global_norm(grads, clip_norm):
  norm = np.sqrt(sum(float(np.sum(g.astype(np.float64) ** 2)) for g in grads))
  return [g * clip_norm / max(norm, clip_norm) for g in grads]


# The optimizer holds its betas in float32; 1 - float32(0.999) differs from
# 0.001 by 4e-5 relative, so the references use the float32 values.
B1, B2 = float(np.float32(0.9)), float(np.float32(0.999))


def numpy_adam_weight_decay(params, grads_per_step, lr, decayed_names,
                            wd=0.01, b1=B1, b2=B2, eps=1e-6, clip=1.0):
  """Google's AdamWeightDecay update, after global-norm clipping."""
  params = {k: v.astype(np.float64) for k, v in params.items()}
  m = {k: np.zeros_like(v) for k, v in params.items()}
  v = {k: np.zeros_like(p) for k, p in params.items()}
  for grads in grads_per_step:
    names = sorted(grads)
    clipped = dict(zip(names, clip_by_global_norm([grads[n] for n in names],
                                                  clip)))
    for name in names:
      g = clipped[name]
      m[name] = b1 * m[name] + (1 - b1) * g
      v[name] = b2 * v[name] + (1 - b2) * g * g
      update = m[name] / (np.sqrt(v[name]) + eps)
      if name in decayed_names:
        update = update + wd * params[name]
      params[name] = params[name] - lr * update
  return params


def numpy_lamb_one_step(params, grads, lr, decayed_names, adapted_names,
                        wd=0.01, b1=B1, b2=B2, eps=1e-6):
  out = {}
  for name, p in params.items():
    g = grads[name].astype(np.float64)
    m_hat = (1 - b1) * g / (1 - b1)
    v_hat = (1 - b2) * g * g / (1 - b2)
    update = m_hat / (np.sqrt(v_hat) + eps)
    if name in decayed_names:
      update = update + wd * p
    ratio = 1.0
    if name in adapted_names:
      p_norm, u_norm = np.linalg.norm(p), np.linalg.norm(update)
      ratio = p_norm / u_norm if p_norm > 0 and u_norm > 0 else 1.0
    out[name] = p - lr * ratio * update
  return out


def make_variables(rng):
  """Variables whose names exercise each exclusion pattern."""
  shapes = {
      'encoder/dense/kernel': (3, 4),
      'encoder/dense/bias': (4,),
      'encoder/LayerNorm/gamma': (4,),
      'encoder/attention/layer_norm/beta': (4,),
      'embeddings/word_embeddings': (5, 3),
  }
  return {name: tf.Variable(rng.normal(size=shape).astype(np.float32),
                            name=name)
          for name, shape in shapes.items()}


DECAYED = {'encoder/dense/kernel', 'embeddings/word_embeddings'}


def apply_steps(opt, variables, grads_per_step):
  names = list(variables)
  for grads in grads_per_step:
    opt.apply_gradients([(tf.constant(grads[n]), variables[n]) for n in names])
  return {n: variables[n].numpy() for n in names}


@pytest.mark.parametrize('num_steps', [1, 2])
def test_adam_weight_decay_matches_numpy(num_steps):
  rng = np.random.default_rng(0)
  variables = make_variables(rng)
  initial = {n: v.numpy() for n, v in variables.items()}
  # Large gradients: the global norm is well above 1, so clipping matters.
  grads_per_step = [{n: rng.normal(scale=3.0, size=v.shape).astype(np.float32)
                     for n, v in initial.items()} for _ in range(num_steps)]
  opt = optimizer_lib.AdamWeightDecay(learning_rate=0.1, global_clipnorm=1.0)
  got = apply_steps(opt, variables, grads_per_step)
  want = numpy_adam_weight_decay(initial, grads_per_step, 0.1, DECAYED)
  for name in initial:
    np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6,
                               err_msg=name)
  if num_steps == 1:
    # No bias correction: the first step of an undecayed variable is
    # lr * 0.1 / (sqrt(0.001) + eps/|g|) <= 0.316 per entry, near it unless
    # the clipped gradient is tiny (bias-corrected Adam would move by <= lr).
    bias = 'encoder/dense/bias'
    moved = np.abs(initial[bias] - got[bias])
    assert np.all((moved > 0.25) & (moved < 0.3163)), moved


def numpy_pytorch_adamw(params, grads_per_step, learning_rates, decayed_names, wd=0.01,
                        b1=B1, b2=B2, eps=1e-6):
  """`torch.optim.AdamW`'s update as its documentation writes it (no clipping), with
  learning_rates[t - 1] at step t: p *= 1 - lr*wd; p -= lr * m_hat / (sqrt(v_hat) + eps),
  m_hat = m / (1 - b1^t), v_hat = v / (1 - b2^t)."""
  params = {k: v.astype(np.float64) for k, v in params.items()}
  m = {k: np.zeros_like(v) for k, v in params.items()}
  v = {k: np.zeros_like(p) for k, p in params.items()}
  for t, (grads, lr) in enumerate(zip(grads_per_step, learning_rates), start=1):
    for name, g in grads.items():
      if name in decayed_names:
        params[name] = params[name] * (1 - lr * wd)
      m[name] = b1 * m[name] + (1 - b1) * g
      v[name] = b2 * v[name] + (1 - b2) * g * g
      m_hat, v_hat = m[name] / (1 - b1**t), v[name] / (1 - b2**t)
      params[name] = params[name] - lr * m_hat / (np.sqrt(v_hat) + eps)
  return params


def test_bias_corrected_adamw_is_pytorch_adamw():
  """adamw_corrected: PyTorch's AdamW (HF's fine-tuning optimizer), epsilon placement included.

  Gradients of 1e-5 make epsilon (1e-6) matter: Keras' Adam, which adds
  epsilon before the bias correction, moves the variables visibly less.
  """
  rng = np.random.default_rng(1)
  variables = make_variables(rng)
  initial = {n: v.numpy() for n, v in variables.items()}
  grads_per_step = [{n: (1e-5 * rng.normal(size=v.shape)).astype(np.float32)
                     for n, v in initial.items()} for _ in range(3)]
  opt = optimizer_lib.create_optimizer(0.1, 1000, 0, 'adamw_corrected', clip_norm=None)
  assert opt.bias_correction and not optimizer_lib.create_optimizer(0.1, 10, 0).bias_correction
  got = apply_steps(opt, variables, grads_per_step)
  learning_rates = [google_learning_rate(step, 0.1, 1000, 0) for step in range(3)]
  want = numpy_pytorch_adamw(initial, grads_per_step, learning_rates, DECAYED)
  for name in initial:
    np.testing.assert_allclose(got[name], want[name], rtol=1e-6, atol=1e-7, err_msg=name)

  reference = {n: tf.Variable(v) for n, v in initial.items()}
  keras_adam = tf_keras.optimizers.legacy.Adam(
      learning_rate=optimizer_lib.create_optimizer(0.1, 1000, 0).learning_rate, epsilon=1e-6)
  keras = apply_steps(keras_adam, reference, grads_per_step)
  name = 'encoder/dense/bias'  # undecayed: only the epsilon placement differs
  assert np.all(np.abs(keras[name] - initial[name]) < 0.8 * np.abs(got[name] - initial[name]))


def test_weight_decay_exclusions_are_a_parameter():
  opt = optimizer_lib.AdamWeightDecay()
  assert opt.weight_decay_rate == 0.01
  assert opt.exclude_from_weight_decay == ('LayerNorm', 'layer_norm', 'bias')
  assert opt.use_weight_decay('bert/encoder/layer_0/output/dense/kernel:0')
  assert not opt.use_weight_decay('bert/encoder/layer_0/output/dense/bias:0')
  assert not opt.use_weight_decay('bert/embeddings/LayerNorm/gamma:0')
  custom = optimizer_lib.AdamWeightDecay(exclude_from_weight_decay=['kernel'])
  assert not custom.use_weight_decay('dense/kernel:0')
  assert custom.use_weight_decay('dense/bias:0')
  assert not optimizer_lib.AdamWeightDecay(
      weight_decay_rate=0.0).use_weight_decay('dense/kernel:0')


def test_sparse_gradient_updates_like_dense():
  rng = np.random.default_rng(1)
  table = rng.normal(size=(5, 3)).astype(np.float32)
  dense_var = tf.Variable(table, name='emb_dense')
  sparse_var = tf.Variable(table, name='emb_sparse')
  with tf.GradientTape(persistent=True) as tape:
    loss_sparse = tf.reduce_sum(tf.gather(sparse_var, [0, 2, 2]) ** 2)
    loss_dense = tf.reduce_sum(
        tf.matmul(tf.one_hot([0, 2, 2], 5), dense_var) ** 2)
  g_sparse = tape.gradient(loss_sparse, sparse_var)
  g_dense = tape.gradient(loss_dense, dense_var)
  assert isinstance(g_sparse, tf.IndexedSlices)
  for var, grad in ((sparse_var, g_sparse), (dense_var, g_dense)):
    optimizer_lib.AdamWeightDecay(learning_rate=0.1).apply_gradients(
        [(grad, var)])
  np.testing.assert_allclose(sparse_var.numpy(), dense_var.numpy(), atol=1e-6)


def test_lamb_one_step_matches_numpy():
  rng = np.random.default_rng(2)
  variables = make_variables(rng)
  initial = {n: v.numpy() for n, v in variables.items()}
  grads = {n: rng.normal(scale=0.1, size=v.shape).astype(np.float32)
           for n, v in initial.items()}
  opt = optimizer_lib.Lamb(learning_rate=0.01)
  got = apply_steps(opt, variables, [grads])
  want = numpy_lamb_one_step(initial, grads, 0.01, DECAYED, DECAYED)
  for name in initial:
    np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6,
                               err_msg=name)


def test_slots_are_checkpointed(tmp_path):
  var = tf.Variable([1.0, 2.0], name='dense/kernel')
  opt = optimizer_lib.AdamWeightDecay(learning_rate=0.1)
  opt.apply_gradients([(tf.constant([0.5, -0.5]), var)])
  path = tf.train.Checkpoint(var=var, optimizer=opt).save(str(tmp_path / 'c'))
  names = {name for name, _ in tf.train.list_variables(path)}
  assert any('/.OPTIMIZER_SLOT/optimizer/m/' in n for n in names), names
  assert any('/.OPTIMIZER_SLOT/optimizer/v/' in n for n in names), names
  var2 = tf.Variable([0.0, 0.0], name='dense/kernel')
  opt2 = optimizer_lib.AdamWeightDecay(learning_rate=0.1)
  tf.train.Checkpoint(var=var2, optimizer=opt2).restore(path)
  opt2.apply_gradients([(tf.constant([0.5, -0.5]), var2)])
  opt.apply_gradients([(tf.constant([0.5, -0.5]), var)])
  np.testing.assert_allclose(var2.numpy(), var.numpy(), rtol=1e-6)
  assert int(opt2.iterations) == 2


def test_schedule_matches_google_formula():
  init_lr, total, warmup = 1e-4, 1000, 100
  lr = schedule_lib.WarmupPolynomialDecay(init_lr, total, warmup)
  for step in (0, 1, 50, 99, 100, 101, 550, 999, 1000, 1200):
    want = google_learning_rate(step, init_lr, total, warmup)
    # float32 arithmetic: 1e-6 of the peak rate absolute.
    np.testing.assert_allclose(float(lr(step)), want, rtol=1e-6,
                               atol=1e-6 * init_lr, err_msg=f'step {step}')
  assert float(lr(0)) == 0.0
  np.testing.assert_allclose(float(lr(100)), 0.9 * init_lr, rtol=1e-6)
  assert float(lr(1000)) == 0.0
  no_warmup = schedule_lib.WarmupPolynomialDecay(init_lr, total, 0)
  np.testing.assert_allclose(float(no_warmup(0)), init_lr, rtol=1e-6)
  restored = schedule_lib.WarmupPolynomialDecay.from_config(lr.get_config())
  np.testing.assert_allclose(float(restored(550)), float(lr(550)))


def test_constant_schedule_is_the_initial_rate_at_every_step():
  """The official TinyBERT's intermediate stage: no warmup, no decay, the last step too."""
  init_lr = 5e-5
  lr = schedule_lib.create_schedule(schedule_lib.CONSTANT, init_lr, 500, 50)
  assert [float(lr(step)) for step in (0, 1, 49, 250, 499, 500, 600)] == [
      np.float32(init_lr)] * 7
  google = schedule_lib.create_schedule(schedule_lib.WARMUP_LINEAR, init_lr, 500, 50)
  assert [float(google(step)) for step in (0, 500)] == [0.0, 0.0]
  with pytest.raises(ValueError, match="schedule must be one of"):
    schedule_lib.create_schedule('cosine', init_lr, 500, 50)


def test_create_optimizer_is_googles():
  opt = optimizer_lib.create_optimizer(2e-5, 100, 10)
  assert isinstance(opt, optimizer_lib.AdamWeightDecay)
  assert opt.global_clipnorm == 1.0 and opt.epsilon == 1e-6
  assert isinstance(opt.learning_rate,
                    tf_keras.optimizers.schedules.LearningRateSchedule)
  assert isinstance(optimizer_lib.create_optimizer(1e-3, 10, 1, 'lamb'),
                    optimizer_lib.Lamb)
  with pytest.raises(ValueError, match="optimizer_type must be one of"):
    optimizer_lib.create_optimizer(1e-3, 10, 1, 'sgd')
  constant = optimizer_lib.create_optimizer(2e-5, 100, 10, schedule=schedule_lib.CONSTANT)
  assert float(constant.learning_rate(100)) == np.float32(2e-5)
