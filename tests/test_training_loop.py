"""The training loop on a toy regression job (tests.toy_job), in process on one device:
gradient accumulation, logging, summaries, checkpoints and resume, warm start, NaN stop,
mixed precision, XLA, evaluation and prediction, metrics, bad settings."""

import contextlib
import errno
import gc
import glob
import logging
import os
import signal

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from cli import Stopped
from tests.tiny_models import model_weights
from tests.toy_job import (LossRecorder, toy_dataset_fn, toy_example, toy_loss_fn, toy_metrics_fn,
                           toy_model_fn, toy_trainer)
from training import checkpointing
from training import evaluation
from training import loop
from training import optimizer as optimizer_lib
from training import strategy as strategy_lib


@contextlib.contextmanager
def _tensorflow_warnings():
  """Collects the messages TensorFlow's Python logger warns of within the block."""
  messages = []
  handler = logging.Handler(logging.WARNING)
  handler.emit = lambda record: messages.append(record.getMessage())
  logger = logging.getLogger('tensorflow')
  logger.addHandler(handler)
  try:
    yield messages
  finally:
    logger.removeHandler(handler)


@pytest.fixture(name='one_device')
def fixture_one_device():
  return strategy_lib.build_strategy('one_device')


def test_gradient_accumulation_equals_larger_batch(one_device, tmp_path):
  # Plain SGD: unlike Adam it is not invariant to a wrong gradient scale.
  def sgd():
    return tf_keras.optimizers.legacy.SGD(0.1)
  tf_keras.utils.set_random_seed(1)
  big = toy_trainer(one_device, tmp_path / 'big', 6, batch_size=32,
                    optimizer_fn=sgd)
  initial = big.model.get_weights()
  big.train()
  # Also the strategy-distributed input path (no iterator checkpoint).
  accumulated = toy_trainer(one_device, tmp_path / 'acc', 6, batch_size=8,
                            optimizer_fn=sgd, gradient_accumulation_steps=4,
                            checkpoint_data_iterator=False)
  accumulated.model.set_weights(initial)
  accumulated.train()
  assert accumulated.global_step == 6
  for name, value in model_weights(big.model).items():
    np.testing.assert_allclose(model_weights(accumulated.model)[name], value,
                               rtol=1e-5, atol=1e-6, err_msg=name)


def test_embeddings_accumulate_and_unused_variables_stay(one_device,
                                                        tmp_path):
  """IndexedSlices gradients accumulate; a variable the loss does not use
  gets no update (no weight decay either), as with Google's tf.gradients."""
  def embedding_model_fn():
    ids = tf_keras.Input((3,), dtype=tf.int32, name='input_ids')
    pooled = tf_keras.layers.GlobalAveragePooling1D()(
        tf_keras.layers.Embedding(50, 4, name='word_embeddings')(ids))
    return tf_keras.Model({'input_ids': ids},
                          [tf_keras.layers.Dense(1, name='used')(pooled),
                           tf_keras.layers.Dense(1, name='unused')(pooled)])

  def dataset_fn(context):
    examples = tf.data.Dataset.range(100).map(lambda i: {
        'input_ids': tf.cast(tf.stack([i % 50, 7, 9]), tf.int32),
        'y': tf.cast(i % 2, tf.float32)})
    return examples.repeat().batch(context.get_per_replica_batch_size(4))

  def embedding_loss_fn(features, outputs):
    return tf.reduce_mean(tf.square(outputs[0][:, 0] - features['y']))

  trainer = loop.Trainer(
      one_device, loop.LoopOptions(str(tmp_path), 4, 3,
                                   gradient_accumulation_steps=2),
      embedding_model_fn, lambda: optimizer_lib.AdamWeightDecay(0.1),
      embedding_loss_fn, dataset_fn)
  before = model_weights(trainer.model)
  trainer.train()
  after = model_weights(trainer.model)
  for name in before:
    changed = not np.array_equal(before[name], after[name])
    assert changed == name.startswith(('word_embeddings', 'used')), name


def test_trains_logs_summaries_and_checkpoints(one_device, tmp_path,
                                               monkeypatch):
  recorder = LossRecorder(monkeypatch)
  trainer = toy_trainer(one_device, tmp_path, 40, log_steps=10,
                        save_checkpoints_steps=15, keep_checkpoint_max=2,
                        iterations_per_loop=4)
  scalars = trainer.train()
  assert recorder.losses[-1] < 0.2 * recorder.losses[0], recorder.losses
  assert set(scalars) == {'loss', 'learning_rate', 'examples_per_second',
                          'mse', 'mae'}
  # The loss is the batch mean of the squared errors the mse metric averages.
  np.testing.assert_allclose(scalars['loss'], scalars['mse'], rtol=1e-5)
  assert scalars['learning_rate'] == 0.0  # End of the linear decay.
  # Saved at 15 and 30, and at the end; two kept.
  state = tf.train.get_checkpoint_state(str(tmp_path))
  assert state.all_model_checkpoint_paths == [
      str(tmp_path / 'model.ckpt-30'), str(tmp_path / 'model.ckpt-40')]
  events = {}
  for path in glob.glob(str(tmp_path / 'events.out.tfevents.*')):
    for record in tf.data.TFRecordDataset(path):
      event = tf.compat.v1.Event.FromString(record.numpy())
      for value in event.summary.value:
        events.setdefault(value.tag, {})[event.step] = float(
            tf.make_ndarray(value.tensor))
  assert set(events) == set(scalars)
  assert sorted(events['loss']) == [10, 20, 30, 40]
  np.testing.assert_allclose(list(events['loss'].values()), recorder.losses)
  np.testing.assert_allclose(events['learning_rate'][20], 0.05 * 20 / 40)


def test_restart_resumes_and_warm_start_runs_only_at_step_zero(one_device,
                                                               tmp_path):
  calls = []

  def init_fn(model):
    calls.append(trainer.global_step)
    model.get_layer('output').bias.assign([0.5])

  trainer = toy_trainer(one_device, tmp_path, 10, init_fn=init_fn,
                        save_checkpoints_steps=5)
  trainer.train()
  assert calls == [0]
  again = toy_trainer(one_device, tmp_path, 20, init_fn=init_fn,
                      save_checkpoints_steps=5)
  again.train()
  assert calls == [0], 'init_fn ran on a restored run'
  assert again.global_step == 20
  # The restart ran 10 more steps, from the saved step 10.
  assert os.path.exists(tmp_path / 'model.ckpt-20.index')
  # A finished run started again trains nothing and leaves the optimizer state it did not
  # need without a warning about "unrestored values".
  with _tensorflow_warnings() as warnings:
    done = toy_trainer(one_device, tmp_path, 20)
    assert done.train() == {}
    del done
    gc.collect()
  assert not warnings, warnings


@pytest.mark.parametrize('signum', [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_saves_the_step_it_stopped_after(one_device, tmp_path, signum):
  handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
  # Sent while the run restores: the first step runs in full, then the loop ends (in the
  # middle of its 1000-step call, between saves).
  trainer = toy_trainer(one_device, tmp_path, 10**6, init_fn=lambda model: os.kill(
      os.getpid(), signum), save_checkpoints_steps=1000, iterations_per_loop=1000)
  with pytest.raises(Stopped) as stopped:
    trainer.train()
  assert stopped.value.signum == signum and trainer.global_step == 1
  separator = ':' if signum == signal.SIGINT else ';'
  assert stopped.value.note == (f'kept {tmp_path}/model.ckpt-1{separator} the same command '
                                'resumes from step 1')
  assert tf.train.latest_checkpoint(str(tmp_path)) == f'{tmp_path}/model.ckpt-1'
  # The handlers are the caller's again, and the next run is not stopped.
  assert {s: signal.getsignal(s) for s in handlers} == handlers
  again = toy_trainer(one_device, tmp_path, 3)
  again.train()
  assert again.global_step == 3


def test_a_changed_input_pipeline_resumes_from_the_weights_with_a_fresh_input(
    one_device, tmp_path, caplog):
  """A checkpoint's input position that the pipeline can no longer take (a stage was added
  since, e.g. by a new version) is dropped with a warning, not a traceback."""
  first = toy_trainer(one_device, tmp_path, 10, save_checkpoints_steps=5)
  first.train()
  saved = model_weights(first.model)
  again = loop.Trainer(
      one_device,
      loop.LoopOptions(output_dir=str(tmp_path), train_batch_size=16, num_train_steps=20,
                       log_steps=5, save_checkpoints_steps=5),
      toy_model_fn,
      lambda: optimizer_lib.create_optimizer(0.0, 20, 2),  # lr 0: the weights stay as restored
      toy_loss_fn, lambda context: toy_dataset_fn(16)(context).shuffle(4), toy_metrics_fn)
  with caplog.at_level(logging.WARNING):
    again.train()
  assert again.global_step == 20 and os.path.exists(tmp_path / 'model.ckpt-20.index')
  assert any('holds an input position this input pipeline cannot take' in r.getMessage()
             for r in caplog.records)
  for name, value in model_weights(again.model).items():
    np.testing.assert_array_equal(value, saved[name], err_msg=name)


def test_a_full_disk_removes_the_partial_checkpoint_and_keeps_the_last(one_device, tmp_path,
                                                                       monkeypatch):
  real_save = tf.train.CheckpointManager.save

  def save(manager, checkpoint_number):
    if checkpoint_number < 10:
      return real_save(manager, checkpoint_number=checkpoint_number)
    os.makedirs(tmp_path / f'model.ckpt-{checkpoint_number}_temp')
    (tmp_path / f'model.ckpt-{checkpoint_number}_temp' / 'part-00000').write_bytes(b'x')
    raise tf.errors.ResourceExhaustedError(
        None, None, f'{tmp_path}/model.ckpt-10_temp/part-00000; No space left on device')

  monkeypatch.setattr(tf.train.CheckpointManager, 'save', save)
  with pytest.raises(OSError) as raised:
    toy_trainer(one_device, tmp_path, 10, save_checkpoints_steps=5).train()
  assert raised.value.errno == errno.ENOSPC
  assert raised.value.filename == os.path.join(tmp_path, 'model.ckpt-10')
  assert not glob.glob(str(tmp_path / '*_temp*'))
  assert tf.train.latest_checkpoint(str(tmp_path)).endswith('model.ckpt-5')


def test_nan_loss_stops_and_keeps_last_good_checkpoint(one_device, tmp_path):
  trainer = toy_trainer(one_device, tmp_path, 20, poison_batch=7,
                        save_checkpoints_steps=3, iterations_per_loop=10)
  with pytest.raises(loop.NonFiniteLossError,
                     match=r'Loss is nan at global step 7: stopped training.*'
                     r'latest good checkpoint is .*model.ckpt-6'):
    trainer.train()
  assert trainer.global_step == 7
  assert tf.train.latest_checkpoint(str(tmp_path)).endswith('model.ckpt-6')
  for name, value in model_weights(trainer.model).items():
    assert np.all(np.isfinite(value)), name
  restored = toy_model_fn()
  latest = tf.train.latest_checkpoint(str(tmp_path))
  assert checkpointing.checkpoint_step(latest) == 6
  tf.train.Checkpoint(model=restored).restore(latest).expect_partial()
  for variable in restored.weights:
    assert np.all(np.isfinite(variable.numpy())), variable.name


@pytest.mark.parametrize('dtype', ['mixed_bfloat16', 'mixed_float16'])
def test_mixed_precision_trains(one_device, tmp_path, monkeypatch, dtype):
  recorder = LossRecorder(monkeypatch)
  trainer = toy_trainer(one_device, tmp_path, 30, dtype=dtype, log_steps=10)
  trainer.train()
  compute_dtype = {'mixed_bfloat16': 'bfloat16', 'mixed_float16': 'float16'}
  assert trainer.model.get_layer('hidden').compute_dtype == compute_dtype[dtype]
  assert trainer.model.get_layer('hidden').kernel.dtype == tf.float32
  assert isinstance(trainer.optimizer,
                    tf_keras.mixed_precision.LossScaleOptimizer) == (
                        dtype == 'mixed_float16')
  assert recorder.losses[-1] < 0.5 * recorder.losses[0], recorder.losses
  # The policy was scoped to the model: the global one is untouched.
  assert tf_keras.mixed_precision.global_policy().name == 'float32'


def test_xla_gives_the_same_losses(one_device, tmp_path, monkeypatch):
  recorder = LossRecorder(monkeypatch)
  tf_keras.utils.set_random_seed(3)
  plain = toy_trainer(one_device, tmp_path / 'plain', 20)
  initial = plain.model.get_weights()
  plain.train()
  xla = toy_trainer(one_device, tmp_path / 'xla', 20, use_xla=True)
  xla.model.set_weights(initial)
  xla.train()
  plain_losses, xla_losses = recorder.losses[:4], recorder.losses[4:]
  assert len(xla_losses) == 4
  np.testing.assert_allclose(xla_losses, plain_losses, rtol=1e-4)


def test_evaluate_and_eval_results_file(one_device, tmp_path):
  model = toy_model_fn()
  results = evaluation.evaluate(one_device, model, toy_loss_fn,
                                toy_dataset_fn(64), toy_metrics_fn,
                                max_eval_steps=3)
  # The numpy reference over the same 3 batches of 64.
  features = {k: np.stack([toy_example(i)[k].numpy() for i in range(192)])
              for k in ('x', 'y')}
  predictions = model({'x': features['x']})[:, 0].numpy()
  errors = (predictions - features['y']) ** 2
  np.testing.assert_allclose(results['loss'], errors.mean(), rtol=1e-5)
  np.testing.assert_allclose(results['mse'], errors.mean(), rtol=1e-5)
  np.testing.assert_allclose(
      results['mae'], np.abs(predictions - features['y']).mean(), rtol=1e-5)
  path = str(tmp_path / 'eval_results.txt')
  evaluation.write_eval_results(path, {**results, 'global_step': 20})
  lines = open(path).read().splitlines()
  assert [line.split(' = ')[0] for line in lines] == [
      'global_step', 'loss', 'mae', 'mse']
  assert lines[0] == 'global_step = 20'
  assert lines[1] == f"loss = {np.float32(results['loss'])}"
  assert os.listdir(tmp_path) == ['eval_results.txt']


def test_predict_yields_outputs_in_dataset_order(one_device):
  model = toy_model_fn()

  def dataset_fn(context):
    del context
    # 50 examples in batches of 16: the last batch has 2.
    return tf.data.Dataset.range(50).map(toy_example).batch(16)

  batches = list(evaluation.predict(one_device, model, dataset_fn))
  assert [len(b) for b in batches] == [16, 16, 16, 2]
  x = np.stack([toy_example(i)['x'].numpy() for i in range(50)])
  np.testing.assert_allclose(np.concatenate(batches), model({'x': x}).numpy(),
                             rtol=1e-5, atol=1e-6)


def test_evaluation_and_prediction_trace_the_model_once(one_device, monkeypatch):
  """A last partial batch (and, in the fine-tuning tasks, batches trimmed to their longest
  row) is no new trace of the model: the step's signature is the dataset's; and a model
  predicts a second dataset of the same features (a run's dev and test sets) with the same
  trace."""
  traces = []
  model_inputs = loop.model_inputs
  monkeypatch.setattr(loop, 'model_inputs',
                      lambda model, f: traces.append(f) or model_inputs(model, f))
  model = toy_model_fn()

  def dataset_fn(context):
    del context
    return tf.data.Dataset.range(50).map(toy_example).batch(16)  # the last batch has 2

  assert len(list(evaluation.predict(one_device, model, dataset_fn))) == 4
  evaluation.evaluate(one_device, model, toy_loss_fn, dataset_fn, toy_metrics_fn)
  assert len(traces) == 2
  again = list(evaluation.predict(one_device, model, dataset_fn))
  assert len(traces) == 2 and len(again) == 4
  other = toy_model_fn()
  assert len(list(evaluation.predict(one_device, other, dataset_fn))) == 4
  assert len(traces) == 3  # another model: its own step


def test_metric_updates_name_defined_metrics():
  metrics = {'acc': tf_keras.metrics.Accuracy(), 'mean': tf_keras.metrics.Mean()}
  loop.update_metrics(metrics, {
      'acc': {'y_true': [1, 2, 3], 'y_pred': [1, 2, 0],
              'sample_weight': [1.0, 1.0, 2.0]},
      'mean': ([1.0, 3.0], [3.0, 1.0])})
  assert loop.metric_results(metrics) == {'acc': 0.5, 'mean': 1.5}
  with pytest.raises(KeyError, match=r"updates metrics \['auc'\] that "
                     r"metrics_fn does not define \(it has \['acc', 'mean'\]"):
    loop.update_metrics(metrics, {'auc': 1.0})


def test_config_rejects_bad_values(tmp_path, monkeypatch):
  with pytest.raises(ValueError, match='num_train_steps must be positive'):
    loop.LoopOptions(str(tmp_path), 8, 0)
  with pytest.raises(ValueError, match='dtype must be one of'):
    loop.LoopOptions(str(tmp_path), 8, 10, dtype='float16')
  with pytest.raises(ValueError, match='distribution strategy must be one of'):
    strategy_lib.build_strategy('parameter_server')
  with pytest.raises(ValueError, match='num_gpus=2 but only 0 GPUs'):
    strategy_lib.build_strategy('mirrored', num_gpus=2)
  monkeypatch.delenv('TF_CONFIG', raising=False)
  with pytest.raises(ValueError, match='needs the cluster in the TF_CONFIG'):
    strategy_lib.build_strategy('multi_worker_mirrored')
