"""Task distillation for SQuAD: task_distill.py --task_name=squad from a teacher fine-tuned by
run_squad on Google's tiny checkpoint (both stages through the CLI, run_squad's outputs for
the student, its export, run_squad reading it), the start/end soft losses against numpy, v2's
outputs, the teacher check and the option errors."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from cli import FlagError
from distillation import downstream
from distillation.options import SquadDistillOptions
from distillation.prediction import SquadPredictionDistillationTask
from distillation import teacher as teacher_lib
from distillation.teacher import TeacherError
import modeling
from modeling.checkpoints import names
from squad import records
from squad import run as squad_run
from training import summaries
from tests.paths import REPO
from tests.soft_labels import log_softmax, mean_kl
from tests.squad_fixtures import (first_answers_only, serve_qa, squad_questions,
                                  write_json)
from tests.tiny_models import bert_inputs, tiny_config_file

ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(REPO))
SETTINGS = dict(max_seq_length=64, doc_stride=32, max_query_length=16)
GOOGLE_VOCAB_SIZE = 30522


@pytest.fixture(name="files", scope="module")
def fixture_files(shared_dir, tmp_path_factory):
  """(vocab, train file, predict file): the 82 questions of v1_sel128, answers cut to the
  first to train, as published to predict."""
  directory = tmp_path_factory.mktemp("squad")
  inputs = shared_dir / "fixtures" / "squad" / "inputs"
  with open(inputs / "v1_sel128.json", encoding="utf-8") as f:
    train = write_json(directory / "train.json", first_answers_only(json.load(f)))
  return (str(shared_dir / "fixtures" / "google_bert_tiny" / "vocab.txt"), train,
          str(inputs / "v1_sel128.json"))


@pytest.fixture(name="teacher", scope="module")
def fixture_teacher(shared_dir, files, tmp_path_factory):
  """run_squad's output_dir: Google's tiny checkpoint (L=2, H=128) fine-tuned for 30 steps."""
  out = tmp_path_factory.mktemp("teacher") / "out"
  tiny = shared_dir / "fixtures" / "google_bert_tiny"
  squad_run.run_squad(squad_run.SquadOptions(
      vocab_file=files[0], init_checkpoint=str(tiny / "bert_model.ckpt"), train_file=files[1],
      output_dir=str(out), do_train=True, num_train_epochs=6, learning_rate=1e-3,
      train_batch_size=16, seed=1, **SETTINGS))
  return out


@pytest.fixture(name="random_teacher", scope="module")
def fixture_random_teacher(tmp_path_factory):
  """A checkpoint directory of an L=2, H=64 SQuAD model with random weights, Google's
  vocabulary size; its span layer drawn wide (stddev 1), so that its start and end
  distributions are far from uniform and from each other."""
  directory = tmp_path_factory.mktemp("random_teacher")
  tf_keras.utils.set_random_seed(1)  # the same teacher whatever ran before in the process
  config = modeling.BertConfig.from_json_file(
      tiny_config_file(directory / "c.json", GOOGLE_VOCAB_SIZE))
  model = modeling.build_squad_model(config)
  span = model.get_layer("cls_squad")
  span.output_weights.assign(tf.random.stateless_normal(span.output_weights.shape, [1, 2]))
  modeling.save_config(config, str(directory / "teacher"))
  modeling.save_google_checkpoint(model, str(directory / "teacher" / "bert_model.ckpt"))
  return directory / "teacher"


def _options(teacher, files, output_dir, **kwargs):
  values = dict(vocab_file=files[0], train_file=files[1], predict_file=files[2],
                output_dir=str(output_dir), teacher_init_checkpoint=str(teacher),
                student_init_from_teacher_layers="1", do_train=True, do_predict=True,
                intermediate_epochs=2, prediction_epochs=4, learning_rate=1e-3,
                train_batch_size=16, predict_batch_size=32, seed=1, log_steps=5, **SETTINGS)
  values.update(kwargs)
  return values


def _window_logits(checkpoint_dir, run_dir):
  """(start, end) logits [n, S] of the SQuAD model in `checkpoint_dir` (config beside it) on
  the windows of run_dir/eval.tf_record."""
  spec = records.feature_spec(SETTINGS["max_seq_length"], is_training=False)
  features = next(iter(tf.data.TFRecordDataset(str(run_dir / "eval.tf_record")).batch(10000)
                       .map(lambda r: tf.io.parse_example(r, spec))))
  model = modeling.build_squad_model(modeling.load_config(str(checkpoint_dir)))
  modeling.load_checkpoint(model, str(checkpoint_dir))
  out = model({k: tf.cast(features[k], tf.int32) for k in modeling.INPUT_NAMES}, training=False)
  return out["start_logits"].numpy(), out["end_logits"].numpy()


def _read_json(path):
  with open(path, encoding="utf-8") as f:
    return json.load(f)


@pytest.mark.slow
@pytest.mark.multiprocess
def test_cli_distills_a_squad_student_that_run_squad_and_its_export_read(teacher, files,
                                                                         tmp_path):
  out, export = tmp_path / "student", tmp_path / "export"
  # The 30-step teacher answers [CLS] in every window: the teacher check would refuse it.
  args = [f"--{name}={value}" for name, value in _options(
      teacher, files, out, export_dir=export, check_teacher=False).items()]
  run = subprocess.run([sys.executable, str(REPO / "task_distill.py"), "--task_name=squad",
                        *args], capture_output=True, text=True, env=ENV, check=False)
  assert run.returncode == 0, run.stderr[-3000:]
  # Stage 1 (10 steps on the training windows): the layer-wise objective falls.
  intermediate = summaries.read_scalars(str(out / downstream.INTERMEDIATE))
  for term in ("loss", "embedding_loss", "hidden_loss", "attention_loss"):
    assert sorted(intermediate[term]) == [5, 10]
  assert intermediate["loss"][10] < intermediate["loss"][5], intermediate["loss"]
  # Stage 2 (20 steps) learned the teacher's start and end distributions: on the predict
  # windows, the student's KL divergence from them is under half that of a uniform answer.
  for teacher_logits, student_logits in zip(_window_logits(teacher, out),
                                            _window_logits(out, out)):
    uniform = np.zeros_like(student_logits)
    assert mean_kl(teacher_logits, student_logits) < 0.5 * mean_kl(teacher_logits, uniform), (
        mean_kl(teacher_logits, student_logits), mean_kl(teacher_logits, uniform))
  prediction = summaries.read_scalars(str(out))
  assert {"start_agreement", "end_agreement"} <= set(prediction)
  # run_squad's outputs, for the student.
  predictions = _read_json(out / "predictions.json")
  questions = squad_questions(files[2])
  assert list(predictions) == [qid for qid, _, _ in questions]
  nbest = _read_json(out / "nbest_predictions.json")
  assert all(entries[0]["text"] == predictions[qid] for qid, entries in nbest.items())
  assert not (out / "null_odds.json").exists()
  results = dict(line.split(" = ") for line in
                 (out / "eval_results.txt").read_text().splitlines())
  assert sorted(results) == ["exact_match", "f1", "global_step"]
  assert results["global_step"] == "20"  # int(82 questions / 16 * 4 epochs)
  # The summary: the student's metrics as eval_results.txt, the teacher's on the same file,
  # the share of questions both answer alike (recomputed from the teacher's answers).
  summary = _read_json(out / downstream.SUMMARY)
  assert summary["student"]["dev"] == pytest.approx(  # eval_results.txt: float32's digits
      {k: float(results[k]) for k in ("exact_match", "f1")}, rel=1e-6)
  assert sorted(summary["teacher"]["dev"]) == ["exact_match", "f1"]
  assert summary["teacher"]["parameters"] > summary["student"]["parameters"]
  assert summary["teacher"]["forward_flops"] > summary["student"]["forward_flops"]
  again = tmp_path / "teacher_again"
  squad_run.run_squad(squad_run.SquadOptions(
      vocab_file=files[0], init_checkpoint=str(teacher), predict_file=files[2],
      output_dir=str(again), do_predict=True, predict_batch_size=32, **SETTINGS))
  teacher_predictions = _read_json(again / "predictions.json")
  assert summary["agreement"] == pytest.approx(np.mean(
      [teacher_predictions[qid] == answer for qid, answer in predictions.items()]))
  # student_init/ holds teacher layer 1 as the student's 0, in Google's format.
  init = tf.train.load_checkpoint(str(out / downstream.STUDENT_INIT / "bert_model.ckpt"))
  source = modeling.build_encoder(modeling.load_config(str(teacher)))
  modeling.load_checkpoint(source, str(teacher))
  name = "bert/encoder/layer_{}/attention/self/query/kernel"
  np.testing.assert_array_equal(init.get_tensor(name.format(0)),
                                names.encoder_variables(source)[name.format(1)].numpy())
  assert modeling.load_config(str(out / downstream.STUDENT_INIT)).num_hidden_layers == 1
  # The export answers as predictions.json: the same text for 9 questions in 10 (else Google's
  # text recovery differs, as for run_squad's export), always a span of the context.
  served = serve_qa(export, [q for _, q, _ in questions], [c for _, _, c in questions])
  same = 0
  for i, (qid, _, context) in enumerate(questions):
    answer = served["answer"][i]
    assert context[served["start"][i]:served["end"][i]] == answer
    same += answer == predictions[qid]
  assert same >= 0.9 * len(questions), same
  # run_squad --do_predict reads the student as its init_checkpoint: the same predictions.
  again = tmp_path / "again"
  squad_run.run_squad(squad_run.SquadOptions(
      vocab_file=files[0], init_checkpoint=str(out), predict_file=files[2],
      output_dir=str(again), do_predict=True, predict_batch_size=32, **SETTINGS))
  assert _read_json(again / "predictions.json") == predictions


def test_the_prediction_stage_loss_is_the_mean_start_and_end_soft_cross_entropy(
    random_teacher, tmp_path):
  """CE(softmax(z_T/t), softmax(z_S/t)) over the window's positions, start and end averaged;
  only the student trains, and its checkpoint is a plain SQuAD model's."""
  tf_keras.utils.set_random_seed(2)  # the student's draw, whatever ran before in the process
  student = modeling.BertConfig.from_json_file(
      tiny_config_file(tmp_path / "s.json", GOOGLE_VOCAB_SIZE, num_hidden_layers=1))
  task = SquadPredictionDistillationTask(
      modeling.load_config(str(random_teacher)), str(random_teacher), temperature=2.0,
      bert_config=student, max_seq_length=16, record_files={})
  model = task.build_model()
  features = bert_inputs(batch=4, seq=16, vocab=GOOGLE_VOCAB_SIZE)
  outputs = model(features, training=False)
  loss, metrics = task.loss(features, outputs)
  expected = []
  for end in ("start", "end"):
    z_s = outputs[f"student_{end}_logits"].numpy() / 2.0
    z_t = outputs[f"teacher_{end}_logits"].numpy() / 2.0
    expected.append(-(np.exp(log_softmax(z_t)) * log_softmax(z_s)).sum(-1).mean())
  assert float(loss) == pytest.approx(np.mean(expected), rel=1e-5)
  assert abs(expected[0] - expected[1]) > 0.01  # two distinct terms
  assert set(metrics) == {"start_agreement", "end_agreement"}
  assert ({id(v) for v in model.trainable_variables} ==
          {id(v) for v in model.get_layer("student").trainable_variables})
  saved = set(task.new_checkpoint(model, None).bert_weights)
  assert saved == set(modeling.new_checkpoint(modeling.build_squad_model(student)).bert_weights)
  assert {"cls/squad/output_weights", "cls/squad/output_bias"} <= saved


@pytest.mark.slow
def test_v2_writes_null_odds_and_the_v2_metrics(random_teacher, shared_dir, tmp_path):
  """The prediction stage alone on SQuAD 2.0 questions (unanswerable ones among them)."""
  inputs = shared_dir / "fixtures" / "squad" / "inputs"
  with open(inputs / "v2_sel128.json", encoding="utf-8") as f:
    train = write_json(tmp_path / "train.json", first_answers_only(json.load(f)))
  files = (str(shared_dir / "fixtures" / "google_bert_tiny" / "vocab.txt"), train,
           str(inputs / "v2_sel128.json"))
  done = downstream.run_task_distill(SquadDistillOptions(**_options(
      random_teacher, files, tmp_path / "out", stage="prediction", prediction_epochs=0.5,
      version_2_with_negative=True, check_teacher=False)))
  predictions, results = done["predict"]
  null_odds = _read_json(tmp_path / "out" / "null_odds.json")
  assert list(null_odds) == list(predictions) == [q for q, _, _ in squad_questions(files[2])]
  assert {"HasAns_f1", "NoAns_f1", "best_f1", "global_step"} <= set(results)
  assert not (tmp_path / "out" / downstream.INTERMEDIATE).exists()


def test_a_teacher_without_its_span_layer_is_refused_before_any_work(files, tmp_path):
  """A pre-trained (not fine-tuned) checkpoint: the most common mistake."""
  config = modeling.BertConfig.from_json_file(
      tiny_config_file(tmp_path / "c.json", GOOGLE_VOCAB_SIZE))
  modeling.save_config(config, str(tmp_path / "pretrained"))
  modeling.save_google_checkpoint(modeling.build_encoder(config),
                                  str(tmp_path / "pretrained" / "bert_model.ckpt"))
  with pytest.raises(TeacherError, match=r"has no SQuAD span layer .* Fine-tune it with "
                                         r"run_squad\.py"):
    downstream.run_task_distill(SquadDistillOptions(**_options(
        tmp_path / "pretrained", files, tmp_path / "out")))
  assert not (tmp_path / "out" / downstream.STUDENT_INIT).exists()


def test_a_teacher_no_better_than_a_constant_position_is_refused(random_teacher, files,
                                                                 tmp_path):
  """A span layer with random weights: found by the check on the training windows."""
  with pytest.raises(TeacherError, match=r"looks un-fine-tuned: start and end accuracy on "
                                         r"the \d+ training windows that hold the answer "
                                         r"0\.\d+, no better than "
                                         r"0\.\d+ \(a constant answer\)\. Fine-tune it with "
                                         r"run_squad\.py first, or pass --nocheck_teacher"):
    downstream.run_task_distill(SquadDistillOptions(**_options(
        random_teacher, files, tmp_path / "out")))
  assert not (tmp_path / "out" / downstream.STUDENT_INIT).exists()


def test_the_span_check_compares_with_the_best_constant_start_and_end():
  """On the windows that hold the answer (position > 0): [CLS] answers are not counted."""
  positions = (np.array([0, 2, 2, 2, 3]), np.array([0, 5, 5, 5, 6]))  # constants: 3/4, 3/4
  logits = [np.eye(8)[p] for p in positions]
  score, chance = teacher_lib.check_spans_better_than_chance(logits, positions, "t")
  assert (score, chance) == (1.0, pytest.approx(0.75 + teacher_lib.CHANCE_MARGIN))
  logits[0][4] = np.eye(8)[2]  # start 2 always, end right: (3/4 + 1) / 2 = 0.875
  assert teacher_lib.check_spans_better_than_chance(logits, positions, "t")[0] == 0.875
  with pytest.raises(TeacherError, match=r"start and end accuracy on the 4 training windows "
                                         r"that hold the answer 0\.7500, no better than "
                                         r"0\.7600"):
    teacher_lib.check_spans_better_than_chance([np.eye(8)[[0, 2, 2, 2, 2]],
                                                np.eye(8)[[0, 5, 5, 5, 5]]], positions, "t")
  always_cls = [np.eye(8)[[0] * 5]] * 2
  with pytest.raises(TeacherError, match=r"accuracy on the 4 .* 0\.0000"):
    teacher_lib.check_spans_better_than_chance(always_cls, positions, "t")
  no_answer = (np.zeros(5, np.int64), np.zeros(5, np.int64))
  assert teacher_lib.check_spans_better_than_chance(always_cls, no_answer, "t") is None


@pytest.mark.parametrize("change, message", [
    (dict(stage="intermediate"), "--stage=intermediate trains no output layer"),
    (dict(train_file=None), "If `do_train` is True, then `train_file` must be specified"),
    (dict(max_query_length=61), r"The max_seq_length \(64\) must be greater than"),
    (dict(temperature=-1.0), "--temperature must be positive"),
])
def test_option_errors(files, tmp_path, change, message):
  with pytest.raises(FlagError, match=message):
    SquadDistillOptions(**_options(tmp_path / "teacher", files, tmp_path / "out", **change))


@pytest.mark.multiprocess
@pytest.mark.parametrize("flags, message", [
    (["--task_name=squad", "--data_dir=/tmp", "--do_eval"],
     "--data_dir, --do_eval are not used with --task_name=squad"),
    (["--task_name=sst-2", "--data_dir=/tmp", "--train_file=t.json", "--doc_stride=8"],
     "--doc_stride, --train_file are not used with --task_name=sst-2 (they are SQuAD's)"),
])
def test_cli_refuses_another_tasks_flags_in_one_line(tmp_path, flags, message):
  run = subprocess.run(
      [sys.executable, str(REPO / "task_distill.py"), "--vocab_file=v.txt",
       f"--output_dir={tmp_path}/out", f"--teacher_init_checkpoint={tmp_path}/teacher",
       "--student_init_from_teacher_layers=1", "--do_train", *flags],
      capture_output=True, text=True, env=ENV, check=False)
  assert run.returncode == 1
  assert run.stderr.strip().splitlines()[-1] == f"task_distill: error: {message}"
  assert "Traceback" not in run.stderr
