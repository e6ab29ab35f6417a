"""General distillation end to end: general_distill.py on create_pretraining_data's records
(the loss falls; run_classifier and extract_features read the student), a student made of
teacher layers, restored masked tokens, and one-line errors."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from classification import run as classification_run
from distillation import general
from feature_extraction import extract
import modeling
import tokenization
from training import summaries
from training import task as task_lib
from tests.classifier_jobs import classifier_options
from tests.paths import REPO, SAMPLE
from tests.pretraining_jobs import PRED, SEQ, pretraining_config_file
from tests.tiny_models import tiny_config_file

ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(REPO))


@pytest.fixture(name="data", scope="module")
def fixture_data(tmp_path_factory, pretraining_records):
  """{records glob, teacher checkpoint directory, student config} over sample_data."""
  directory = tmp_path_factory.mktemp("distill")
  teacher_dir = directory / "teacher"
  teacher_dir.mkdir()
  # A random L=2, H=64 teacher, without dropout, beside its config as Google ships them.
  config_file = pretraining_config_file(teacher_dir / "bert_config.json", dropout=0.0)
  teacher = modeling.build_encoder(modeling.BertConfig.from_json_file(config_file))
  modeling.save_google_checkpoint(teacher, str(teacher_dir / "bert_model.ckpt"))
  vocab_size = modeling.load_config(config_file).vocab_size
  student = tiny_config_file(directory / "student.json", vocab_size, hidden_size=32,
                             num_hidden_layers=1, intermediate_size=64,
                             max_position_embeddings=2 * SEQ)
  records = os.path.join(os.path.dirname(pretraining_records[0]), "*.tfrecord")
  return {"input_file": records, "teacher": str(teacher_dir),
          "student": student}


def _flags(data, output_dir, **extra):
  values = dict(input_file=data["input_file"], teacher_init_checkpoint=data["teacher"],
                output_dir=str(output_dir), max_seq_length=SEQ, max_predictions_per_seq=PRED,
                train_batch_size=16, learning_rate=5e-3, num_train_steps=60,
                num_warmup_steps=5, log_steps=10, save_checkpoints_steps=30, seed=1)
  values.update(extra)
  return values


@pytest.mark.slow
@pytest.mark.multiprocess
def test_cli_distills_a_student_that_the_other_scripts_read(data, tmp_path):
  out = tmp_path / "student"
  args = [f"--{name}={value}" for name, value in _flags(
      data, out, student_bert_config_file=data["student"]).items()]
  run = subprocess.run([sys.executable, str(REPO / "general_distill.py"), *args],
                       capture_output=True, text=True, env=ENV, check=False)
  assert run.returncode == 0, run.stderr[-3000:]
  scalars = summaries.read_scalars(str(out))
  for term in ("loss", "embedding_loss", "hidden_loss", "attention_loss"):
    assert sorted(scalars[term]) == [10, 20, 30, 40, 50, 60]
    assert scalars[term][60] < 0.5 * scalars[term][10], (term, scalars[term])
  assert "attention_kl_loss" not in scalars  # weight 0: left out
  assert modeling.load_config(str(out)) == modeling.BertConfig.from_json_file(data["student"])
  # run_classifier takes output_dir as its init_checkpoint (config read beside it) ...
  results = classification_run.run_classifier(classifier_options(
      tmp_path, init_checkpoint=str(out), bert_config_file=None, do_train=False, do_eval=True,
      output_dir=str(tmp_path / "classifier")))
  assert 0.0 <= results["eval"]["eval_accuracy"] <= 1.0
  # ... and extract_features gives the student's last layer.
  text = tmp_path / "input.txt"
  text.write_text("the ending is perfect .\n")
  extract.extract_features(modeling.load_config(str(out)), str(out),
                           tokenization.FullTokenizer(str(SAMPLE / "vocab.txt")), str(text),
                           str(tmp_path / "features.jsonl"), "-1", max_seq_length=16)
  line = json.loads((tmp_path / "features.jsonl").read_text())
  assert len(line["features"][0]["layers"][0]["values"]) == 32


@pytest.mark.slow
def test_a_student_made_of_all_teacher_layers_starts_at_zero_loss(data, tmp_path):
  """The copied student, through identity projections, matches its teacher exactly."""
  scalars = general.run(general.GeneralDistillOptions(**_flags(
      data, tmp_path / "out", student_init_from_teacher_layers="0,1", num_train_steps=1,
      log_steps=1, attention_kl_loss_weight=1.0)))
  assert scalars["loss"] < 1e-5 and set(scalars) >= {"attention_kl_loss", "hidden_loss"}
  teacher = modeling.load_config(data["teacher"])
  assert modeling.load_config(str(tmp_path / "out")) == teacher
  # The same command with more steps resumes: student, projections and optimizer restored.
  general.run(general.GeneralDistillOptions(**_flags(
      data, tmp_path / "out", student_init_from_teacher_layers="0,1", num_train_steps=2,
      log_steps=1, attention_kl_loss_weight=1.0)))
  assert tf.train.latest_checkpoint(str(tmp_path / "out")).endswith("model.ckpt-2")
  # A rerun with another student config is refused: the checkpoints are the first one's.
  with pytest.raises(modeling.ConfigError, match="the student.s config differs from"):
    general.run(general.GeneralDistillOptions(**_flags(
        data, tmp_path / "out", student_init_from_teacher_layers="1", num_train_steps=2)))


def test_restore_masked_tokens_puts_the_originals_back():
  features = {
      "input_ids": tf.constant([[101, 103, 7, 103, 102], [101, 8, 55, 102, 0]]),
      "masked_lm_positions": tf.constant([[1, 3, 0], [2, 0, 0]]),
      "masked_lm_ids": tf.constant([[5, 6, 0], [9, 0, 0]]),
      "masked_lm_weights": tf.constant([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]]),
  }
  restored = general.restore_masked_tokens(features)
  np.testing.assert_array_equal(restored["input_ids"], [[101, 5, 7, 6, 102],
                                                        [101, 8, 9, 102, 0]])
  assert restored["masked_lm_ids"] is features["masked_lm_ids"]


def test_restored_records_hold_no_mask_token(data):
  task = general.GeneralDistillationTask(
      tf.io.gfile.glob(data["input_file"]), PRED, dynamic=False, restore=True,
      teacher_config=modeling.load_config(data["teacher"]), teacher_checkpoint=data["teacher"],
      student_config=modeling.load_config(data["teacher"]), layer_map=(0, 1), seq_length=SEQ)
  mask_id = tokenization.FullTokenizer(str(SAMPLE / "vocab.txt")).vocab["[MASK]"]
  batch = next(iter(task.dataset_fn(task_lib.EVAL, 64)(tf.distribute.InputContext())))
  real = batch["masked_lm_weights"].numpy() > 0
  assert real.sum() > 100
  ids = batch["input_ids"].numpy()
  assert not (ids == mask_id).any()
  at = np.take_along_axis(ids, batch["masked_lm_positions"].numpy(), axis=1)
  np.testing.assert_array_equal(at[real], batch["masked_lm_ids"].numpy()[real])


@pytest.mark.multiprocess
def test_cli_errors_are_one_line(data, tmp_path):
  args = [f"--{name}={value}" for name, value in _flags(
      data, tmp_path / "out", student_init_from_teacher_layers="1,2").items()]
  run = subprocess.run([sys.executable, str(REPO / "general_distill.py"), *args],
                       capture_output=True, text=True, env=ENV, check=False)
  assert (run.returncode, run.stderr.splitlines()[-1]) == (
      1, "general_distill: error: --student_init_from_teacher_layers must name teacher layers "
         "0..1, got 1,2")
  assert not (tmp_path / "out").exists()  # refused before anything was written

