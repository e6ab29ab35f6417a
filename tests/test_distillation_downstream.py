"""Task distillation: task_distill.py from a teacher fine-tuned by run_classifier on
sample_data/sentiment (both stages, the outputs every script reads, the summary), the
prediction stage's loss, the teacher checks and the option errors."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from classification import run as classification_run
from classification import tfrecords
from cli import FlagError
from distillation import downstream
from distillation.options import TaskDistillOptions
from distillation.prediction import PredictionDistillationTask
from distillation.teacher import TeacherError
import modeling
from modeling.checkpoints import names
from training import summaries
from tests.paths import REPO, SAMPLE
from tests.soft_labels import log_softmax, mean_kl
from tests.tiny_models import bert_inputs, tiny_config_file

ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(REPO))
SEQ = 32
VOCAB_SIZE = 2231  # sample_data/vocab.txt
TEST_EXAMPLES = 100


@pytest.fixture(name="teacher", scope="module")
def fixture_teacher(tmp_path_factory):
  """run_classifier's output_dir: an L=4, H=64 classifier fine-tuned on the sentiment sample."""
  directory = tmp_path_factory.mktemp("teacher")
  config = tiny_config_file(directory / "teacher.json", VOCAB_SIZE, num_hidden_layers=4)
  out = directory / "out"
  results = classification_run.run_classifier(classification_run.ClassifierOptions(
      task_name="sst-2", data_dir=str(SAMPLE / "sentiment"), vocab_file=str(SAMPLE / "vocab.txt"),
      output_dir=str(out), bert_config_file=config, do_train=True, do_eval=True,
      max_seq_length=SEQ, num_train_epochs=4, learning_rate=1e-3, train_batch_size=16, seed=1))
  assert results["eval"]["eval_accuracy"] > 0.9
  return out


def _options(teacher, output_dir, **kwargs):
  # Learning rate 3e-4: at 1e-3 the prediction stage sat at the edge of stability, and on a
  # host with AMX (oneDNN) its student collapsed to one answer after ~30 steps.
  values = dict(task_name="sst-2", data_dir=str(SAMPLE / "sentiment"),
                vocab_file=str(SAMPLE / "vocab.txt"), output_dir=str(output_dir),
                teacher_init_checkpoint=str(teacher), student_init_from_teacher_layers="1,3",
                do_train=True, max_seq_length=SEQ, intermediate_epochs=2, prediction_epochs=2,
                learning_rate=3e-4, train_batch_size=16, seed=1, log_steps=5)
  values.update(kwargs)
  return values


def _dev_records(run_dir):
  """The dev records run_dir/eval.tf_record, parsed: {feature: [n, ...]}."""
  spec = tfrecords.feature_spec(SEQ)
  return next(iter(tf.data.TFRecordDataset(str(run_dir / "eval.tf_record")).batch(1000).map(
      lambda r: tf.io.parse_example(r, spec))))


def _dev_logits(checkpoint_dir, records):
  """The logits [n, 2] of the classifier in `checkpoint_dir` (config beside it) on `records`."""
  model = modeling.build_classifier(modeling.load_config(str(checkpoint_dir)), 2)
  modeling.load_checkpoint(model, str(checkpoint_dir))
  return model({k: tf.cast(records[k], tf.int32) for k in modeling.INPUT_NAMES},
               training=False).numpy()


@pytest.mark.slow
@pytest.mark.multiprocess
def test_cli_distills_a_student_that_every_script_reads(teacher, tmp_path):
  out, export = tmp_path / "student", tmp_path / "export"
  args = [f"--{name}={value}" for name, value in _options(
      teacher, out, do_eval=True, do_predict=True, export_dir=export).items()]
  run = subprocess.run([sys.executable, str(REPO / "task_distill.py"), *args],
                       capture_output=True, text=True, env=ENV, check=False)
  assert run.returncode == 0, run.stderr[-3000:]
  # Stage 1 (75 steps): the layer-wise objective, averaged over the last 15 steps, is under
  # three quarters of its first 5 steps' (not each term: they trade off, and the embedding
  # term starts near its floor, the student's embeddings being the teacher's). Means over
  # windows, not one logged value: single batches are noisy, and the teacher itself changes
  # with the host's CPU kernels.
  intermediate = summaries.read_scalars(str(out / downstream.INTERMEDIATE))
  for term in ("loss", "embedding_loss", "hidden_loss", "attention_loss"):
    assert sorted(intermediate[term]) == list(range(5, 80, 5))
  late = np.mean([intermediate["loss"][step] for step in (65, 70, 75)])
  assert late < 0.75 * intermediate["loss"][5], intermediate["loss"]
  # Stage 2 learned the teacher's soft labels: on the 150 dev rows, its KL divergence from
  # the teacher's class distribution (numpy, from both checkpoints) is under half that of a
  # uniform answer (the prediction stage starts from a new classifier layer, near uniform),
  # and its labels agree with the teacher's more often than any constant answer's would.
  records = _dev_records(out)
  teacher_logits, student_logits = _dev_logits(teacher, records), _dev_logits(out, records)
  uniform = np.zeros_like(student_logits)
  assert mean_kl(teacher_logits, student_logits) < 0.5 * mean_kl(teacher_logits, uniform), (
      mean_kl(teacher_logits, student_logits), mean_kl(teacher_logits, uniform))
  teacher_labels, student_labels = teacher_logits.argmax(-1), student_logits.argmax(-1)
  agreement = np.mean(student_labels == teacher_labels)
  assert agreement > max(np.mean(teacher_labels == 0), np.mean(teacher_labels == 1)), agreement
  # run_classifier's outputs, for the student: its accuracy is that of its logits (numpy).
  results = dict(line.split(" = ") for line in (out / "eval_results.txt").read_text().split("\n")
                 if line)
  assert results["global_step"] == "75"
  accuracy = np.mean(student_labels == records["label_ids"].numpy())
  assert float(results["eval_accuracy"]) == pytest.approx(accuracy, abs=1e-6)
  assert len((out / "test_results.tsv").read_text().splitlines()) == TEST_EXAMPLES
  assert (export / "saved_model.pb").exists()
  # The summary sets the two models side by side.
  summary = json.loads((out / downstream.SUMMARY).read_text())
  assert summary["student"]["parameters"] < summary["teacher"]["parameters"]
  assert summary["student"]["forward_flops"] * 2 == pytest.approx(
      summary["teacher"]["forward_flops"], rel=0.01)
  assert summary["student"]["dev"]["eval_accuracy"] == pytest.approx(accuracy, abs=1e-6)
  assert summary["agreement"] == pytest.approx(agreement, abs=1e-6)
  # student_init/ holds teacher layers 1 and 3 as the student's 0 and 1, in Google's format.
  init = tf.train.load_checkpoint(str(out / downstream.STUDENT_INIT / "bert_model.ckpt"))
  source = modeling.build_encoder(modeling.load_config(str(teacher)))
  modeling.load_checkpoint(source, str(teacher))
  source = names.encoder_variables(source)
  for student_layer, teacher_layer in ((0, 1), (1, 3)):
    name = "bert/encoder/layer_{}/attention/self/query/kernel"
    np.testing.assert_array_equal(init.get_tensor(name.format(student_layer)),
                                  source[name.format(teacher_layer)].numpy())
  assert modeling.load_config(str(out / downstream.STUDENT_INIT)).num_hidden_layers == 2
  # run_classifier reads output_dir as its init_checkpoint (config beside it): the same student.
  again = classification_run.run_classifier(classification_run.ClassifierOptions(
      task_name="sst-2", data_dir=str(SAMPLE / "sentiment"), vocab_file=str(SAMPLE / "vocab.txt"),
      output_dir=str(tmp_path / "eval"), init_checkpoint=str(out), do_eval=True,
      max_seq_length=SEQ))
  assert again["eval"]["eval_accuracy"] == pytest.approx(accuracy, abs=1e-6)


def test_the_prediction_stage_learns_the_teachers_soft_labels(teacher, tmp_path):
  """Its loss is CE(softmax(z_T/t), softmax(z_S/t)) of the two classifiers' logits; only the
  student trains, and its checkpoint is a plain classifier's."""
  student = modeling.BertConfig.from_json_file(tiny_config_file(tmp_path / "s.json", VOCAB_SIZE))
  task = PredictionDistillationTask(
      modeling.load_config(str(teacher)), str(teacher), temperature=2.0, bert_config=student,
      num_labels=2, max_seq_length=SEQ, record_files={}, task_name="sst-2")
  model = task.build_model()
  features = bert_inputs(batch=4, seq=SEQ, vocab=VOCAB_SIZE)
  outputs = model(features, training=False)
  loss, metrics = task.loss(dict(features, label_ids=tf.constant([0, 1, 1, 0])), outputs)
  z_s, z_t = outputs["student_logits"].numpy() / 2.0, outputs["teacher_logits"].numpy() / 2.0
  expected = -(np.exp(log_softmax(z_t)) * log_softmax(z_s)).sum(-1).mean()
  assert float(loss) == pytest.approx(expected, rel=1e-5)
  assert set(metrics) == {"accuracy", "agreement"}
  assert ({id(v) for v in model.trainable_variables} ==
          {id(v) for v in model.get_layer("student").trainable_variables})
  assert not model.get_layer("teacher").trainable_variables
  saved = set(task.new_checkpoint(model, None).bert_weights)
  assert saved == set(modeling.new_checkpoint(modeling.build_classifier(student, 2)).bert_weights)
  assert {"output_weights", "output_bias"} <= saved


def test_a_teacher_without_its_classifier_layer_is_refused(tmp_path):
  """A pre-trained (not fine-tuned) checkpoint: the most common mistake."""
  config = modeling.BertConfig.from_json_file(tiny_config_file(tmp_path / "c.json", VOCAB_SIZE))
  modeling.save_config(config, str(tmp_path / "pretrained"))
  modeling.save_google_checkpoint(modeling.build_encoder(config),
                                  str(tmp_path / "pretrained" / "bert_model.ckpt"))
  with pytest.raises(TeacherError, match=r"has no classifier output layer .* not fine-tuned"):
    downstream.run_task_distill(TaskDistillOptions(**_options(
        tmp_path / "pretrained", tmp_path / "out", student_init_from_teacher_layers="1")))


@pytest.mark.slow
def test_a_teacher_no_better_than_a_constant_answer_is_refused(tmp_path):
  """A classifier that answers 0 whatever the input scores the majority share (0.5 here)."""
  config = modeling.BertConfig.from_json_file(tiny_config_file(tmp_path / "c.json", VOCAB_SIZE))
  classifier = modeling.build_classifier(config, 2)
  head = classifier.get_layer("classifier")
  head.output_weights.assign(tf.zeros_like(head.output_weights))
  head.output_bias.assign([1.0, 0.0])
  modeling.save_config(config, str(tmp_path / "teacher"))
  modeling.save_google_checkpoint(classifier, str(tmp_path / "teacher" / "bert_model.ckpt"))
  options = _options(tmp_path / "teacher", tmp_path / "out", student_init_from_teacher_layers="1")
  with pytest.raises(TeacherError, match=r"looks un-fine-tuned: dev accuracy 0\.5000, no better "
                                         r"than 0\.5100 .*--nocheck_teacher"):
    downstream.run_task_distill(TaskDistillOptions(**options))
  assert not (tmp_path / "out" / downstream.INTERMEDIATE).exists()
  # --nocheck_teacher distills it anyway (one intermediate step here).
  done = downstream.run_task_distill(TaskDistillOptions(**dict(
      options, check_teacher=False, stage=downstream.INTERMEDIATE, intermediate_epochs=0.03)))
  assert set(done["train"]) == {downstream.INTERMEDIATE}


@pytest.mark.slow
def test_the_prediction_stage_alone_starts_from_the_students_initial_weights(teacher, tmp_path):
  done = downstream.run_task_distill(TaskDistillOptions(**_options(
      teacher, tmp_path / "out", stage=downstream.PREDICTION, prediction_epochs=0.2,
      do_eval=True)))
  assert set(done["train"]) == {downstream.PREDICTION}
  assert not (tmp_path / "out" / downstream.INTERMEDIATE).exists()
  assert tf.train.latest_checkpoint(str(tmp_path / "out")).endswith("model.ckpt-7")
  assert done["eval"]["global_step"] == 7


@pytest.mark.slow
@pytest.mark.parametrize("schedule, logged", [
    (None, [3e-4, 3e-4, 3e-4]),  # the default: constant, as the official TinyBERT
    ("warmup_linear", [2e-4, 1e-4, 0.0]),  # 3 steps, no warmup step (int(3 * 0.1))
])
def test_the_intermediate_stages_learning_rate(teacher, tmp_path, schedule, logged):
  change = {"intermediate_lr_schedule": schedule} if schedule else {}
  out = tmp_path / "out"
  downstream.run_task_distill(TaskDistillOptions(**_options(
      teacher, out, check_teacher=False, stage=downstream.INTERMEDIATE,
      intermediate_epochs=0.1, log_steps=1, **change)))  # 600 rows / 16 * 0.1: 3 steps
  rates = summaries.read_scalars(str(out / downstream.INTERMEDIATE))["learning_rate"]
  np.testing.assert_allclose([rates[step] for step in (1, 2, 3)], logged, rtol=1e-6, atol=1e-12)


@pytest.mark.slow
def test_the_intermediate_stage_counts_padded_positions_when_asked(teacher, tmp_path):
  """--padded_positions reaches the intermediate stage's MSEs: the same first step logs other
  losses (the sample's rows are shorter than max_seq_length)."""
  first = {}
  for padding in ("excluded", "included"):
    out = tmp_path / padding
    downstream.run_task_distill(TaskDistillOptions(**_options(
        teacher, out, check_teacher=False, stage=downstream.INTERMEDIATE,
        intermediate_epochs=0.03, log_steps=1, padded_positions=padding)))  # 1 step
    scalars = summaries.read_scalars(str(out / downstream.INTERMEDIATE))
    first[padding] = {name: scalars[name][1] for name in ("embedding_loss", "hidden_loss",
                                                          "attention_loss")}
  for name, value in first["excluded"].items():
    assert first["included"][name] != pytest.approx(value, rel=1e-3), name


@pytest.mark.parametrize("change, message", [
    (dict(stage="intermediate", do_eval=True),
     "--stage=intermediate trains no output layer: run --stage=prediction"),
    (dict(temperature=0.0), "--temperature must be positive, got 0.0"),
    (dict(stage="all"), "--stage must be one of intermediate, prediction, both, got 'all'"),
    (dict(intermediate_lr_schedule="none"),
     "--intermediate_lr_schedule must be one of warmup_linear, constant, got 'none'"),
    (dict(padded_positions="zero"),
     "--padded_positions must be one of excluded, included, got 'zero'"),
])
def test_option_errors(tmp_path, change, message):
  with pytest.raises(FlagError, match=message):
    TaskDistillOptions(**_options(tmp_path / "teacher", tmp_path / "out", **change))


@pytest.mark.slow
def test_the_stages_as_two_commands_the_prediction_stage_on_augmented_rows(teacher, tmp_path):
  """README's split: --stage=intermediate on train.tsv, then --stage=prediction --aug_train in
  the same output_dir, which trains on train_aug.tsv from the intermediate stage's weights."""
  data = tmp_path / "data"
  data.mkdir()
  for name in ("train.tsv", "dev.tsv", "test.tsv"):
    (data / name).write_text((SAMPLE / "sentiment" / name).read_text())
  header, *rows = (SAMPLE / "sentiment" / "train.tsv").read_text().splitlines(keepends=True)
  (data / "train_aug.tsv").write_text(header + "".join(rows * 3))  # 1,800 rows
  out = tmp_path / "out"
  options = _options(teacher, out, data_dir=str(data), check_teacher=False)
  downstream.run_task_distill(TaskDistillOptions(**dict(
      options, stage=downstream.INTERMEDIATE, intermediate_epochs=0.1)))
  intermediate = tf.train.latest_checkpoint(str(out / downstream.INTERMEDIATE))
  assert intermediate.endswith("model.ckpt-3")  # 600 rows / 16 * 0.1
  # A learning rate too small to move the weights: the student ends where it started.
  downstream.run_task_distill(TaskDistillOptions(**dict(
      options, stage=downstream.PREDICTION, task_options={"aug_train": True},
      prediction_epochs=0.1, learning_rate=1e-12)))
  assert tf.train.latest_checkpoint(str(out)).endswith("model.ckpt-11")  # 1,800 rows / 16 * 0.1
  config = modeling.load_config(str(out))

  def student(path):
    encoder = modeling.build_encoder(config)
    modeling.load_checkpoint(encoder, path)
    return names.encoder_variables(encoder)["bert/encoder/layer_1/attention/self/query/kernel"]
  final = student(str(out)).numpy()
  np.testing.assert_allclose(final, student(intermediate).numpy(), atol=1e-6)
  assert np.abs(final - student(str(out / downstream.STUDENT_INIT))).max() > 1e-3
