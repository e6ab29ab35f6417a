"""run_pretraining in process: learning on sample_data, summaries, eval_results.txt, the
output_dir's checkpoints loaded into a classifier and as init_checkpoint; eval of Google's
tiny checkpoint against its reference losses; XLA gives the same losses, mixed_bfloat16
trains; bad inputs fail before training with clear errors.

Data: our create_pretraining_data on sample_data/corpus.txt (seq 64, 10
predictions); model: L=2, H=64 over sample_data/vocab.txt.
"""

import glob
import os

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import fileio
import modeling
import pretraining
from pretraining import inputs
from tests.pretraining_jobs import PRED, SEQ, pretraining_config_file, pretraining_options
from tests.records import copy_records_with_one_changed, write_records
from tests.tiny_models import checkpoint_word_embeddings, minilm_word_embeddings
from training import loop, summaries

@pytest.fixture(name="data", scope="module")
def fixture_data(tmp_path_factory, pretraining_records):
  """(input_file glob, bert_config_file, bert_config_file without dropout)."""
  directory = tmp_path_factory.mktemp("data")
  records = os.path.join(os.path.dirname(pretraining_records[0]), "*.tfrecord")
  return (records, pretraining_config_file(directory / "bert_config.json"),
          pretraining_config_file(directory / "bert_config_nodrop.json", dropout=0.0))


def read_eval_results(output_dir):
  with open(os.path.join(output_dir, "eval_results.txt"), encoding="utf-8") as f:
    return {k: float(v) for k, v in (line.split(" = ") for line in f.read().splitlines())}


@pytest.mark.slow
def test_learns_and_its_checkpoints_feed_every_consumer(data, tmp_path):
  out = tmp_path / "run"
  results = pretraining.run(pretraining_options(data, out, do_eval=True, log_steps=5))
  events = summaries.read_scalars(str(out))
  assert set(events) == {"loss", "learning_rate", "examples_per_second", "masked_lm_accuracy",
                         "masked_lm_loss", "next_sentence_accuracy", "next_sentence_loss"}
  assert sorted(events["loss"]) == list(range(5, 45, 5))
  # Uniform guessing over 2,231 wordpieces is ln(2231) = 7.7: the first 5
  # steps average ~7.5; the unigram statistics bring it to ~6.3 by step 20
  # (the plateau of a few dozen steps). Window means: 720 slots each.
  mlm = events["masked_lm_loss"]
  late = [25, 30, 35, 40]
  assert mlm[5] > 7.0 and np.mean([mlm[s] for s in late]) < mlm[5] - 0.8, mlm
  accuracy = events["masked_lm_accuracy"]
  assert np.mean([accuracy[s] for s in late]) > accuracy[5] + 0.01, accuracy
  assert results["eval"]["masked_lm_accuracy"] > 0.03  # random weights: ~1/2231
  # loss averages the batch losses; masked_lm_loss weights the window's slots
  # together (Google's metric): equal up to the batches' different slot counts.
  np.testing.assert_allclose(events["loss"][40], mlm[40] + events["next_sentence_loss"][40],
                             rtol=1e-3)
  assert events["learning_rate"][20] == pytest.approx(2e-3 * 20 / 40)
  # Google's eval keys, in eval_results.txt.
  written = read_eval_results(str(out))
  assert set(written) == {"global_step", "loss", "masked_lm_accuracy", "masked_lm_loss",
                          "next_sentence_accuracy", "next_sentence_loss"}
  assert written["global_step"] == 40
  assert written["loss"] == pytest.approx(results["eval"]["loss"], rel=1e-6)
  # The layout every consumer reads: the config, and checkpoints by Google name.
  assert modeling.load_config(str(out)) == modeling.BertConfig.from_json_file(data[1])
  assert tf.train.latest_checkpoint(str(out)).endswith("model.ckpt-40")
  reader = tf.train.load_checkpoint(str(out / "model.ckpt-40"))
  assert any(k.startswith("bert_weights/bert.Sembeddings.Sword_embeddings")
             for k in reader.get_variable_to_shape_map())

  # run_classifier / extract_features: the encoder of the pre-training checkpoint.
  config = modeling.load_config(str(out))
  classifier = modeling.build_classifier(config, num_labels=3, seq_length=SEQ)
  report = modeling.load_checkpoint(classifier, str(out))
  assert "classifier output layer" in report.heads_absent
  pretrained = modeling.build_pretraining_model(config, seq_length=SEQ,
                                                max_predictions_per_seq=PRED)
  modeling.load_checkpoint(pretrained, str(out / "model.ckpt-40"))
  for name, variable in modeling.checkpoints.names.encoder_variables(
      classifier.get_layer("bert")).items():
    np.testing.assert_array_equal(
        variable.numpy(), reader.get_tensor(
            "bert_weights/" + name.replace(".", "..").replace("/", ".S")
            + "/.ATTRIBUTES/VARIABLE_VALUE"), err_msg=name)

  # run_pretraining's init_checkpoint: evaluating it elsewhere gives the same results.
  again = pretraining.run(pretraining_options(data, tmp_path / "eval", do_train=False,
                                              do_eval=True, init_checkpoint=str(out)))
  for key in ("loss", "masked_lm_accuracy", "masked_lm_loss", "next_sentence_loss"):
    assert again["eval"][key] == pytest.approx(results["eval"][key], rel=1e-5), key
  assert again["eval"]["global_step"] == 0  # a warm start, not a resume (as Estimator)
  # do_eval alone on output_dir: its latest checkpoint wins over init_checkpoint.
  same = pretraining.run(pretraining_options(data, out, do_train=False, do_eval=True,
                                             init_checkpoint="/no/such/checkpoint"))
  assert same["eval"] == pytest.approx(results["eval"], rel=1e-5)


def test_eval_of_googles_checkpoint_matches_its_reference(shared_dir, tmp_path):
  fixture = shared_dir / "fixtures" / "google_bert_tiny"
  ref = np.load(fixture / "reference.npz")
  names = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions", "masked_lm_ids",
           "masked_lm_weights", "next_sentence_labels")
  write_records(tmp_path / "ref.tfrecord", {name: ref[name] for name in names})
  results = pretraining.run(pretraining.PretrainingOptions(
      bert_config_file=str(fixture / "bert_config.json"),
      input_file=str(tmp_path / "ref.tfrecord"), output_dir=str(tmp_path / "out"),
      init_checkpoint=str(fixture / "bert_model.ckpt"), max_seq_length=32,
      max_predictions_per_seq=5, do_eval=True, eval_batch_size=4, max_eval_steps=10))["eval"]
  weights = ref["masked_lm_weights"]
  # One batch of the 4 examples: Estimator's `loss` is the mean of the batch
  # total losses, so Google's total_loss (masked-LM loss with its + 1e-5 in the
  # denominator, plus the next-sentence loss).
  assert results["loss"] == pytest.approx(float(ref["total_loss"]), abs=1e-4)
  # metric_fn's masked_lm_loss is tf.metrics.mean(per-slot loss, weights):
  # sum(w * l) / sum(w), without the + 1e-5 of the training loss.
  weighted_mean = float(np.sum(weights * ref["masked_lm_example_loss"]) / np.sum(weights))
  assert results["masked_lm_loss"] == pytest.approx(weighted_mean, abs=1e-4)
  assert results["next_sentence_loss"] == pytest.approx(float(ref["next_sentence_loss"]),
                                                        abs=1e-4)
  predicted = np.argmax(ref["masked_lm_logits"], axis=-1)
  assert results["masked_lm_accuracy"] == pytest.approx(
      float(np.sum(weights * (predicted == ref["masked_lm_ids"])) / np.sum(weights)))
  assert results["next_sentence_accuracy"] == pytest.approx(float(np.mean(
      np.argmax(ref["next_sentence_logits"], -1) == ref["next_sentence_labels"][:, 0])))
  assert results["global_step"] == 0
  assert read_eval_results(str(tmp_path / "out"))["loss"] == pytest.approx(results["loss"])


@pytest.mark.slow
def test_continues_from_a_huggingface_dir_with_its_config(data, minilm_dir, tmp_path):
  """No bert_config_file: the HF directory's config.json (exact GELU) is the model's and is
  stored with the checkpoints; a learning rate of 1e-30 moves the weights by ~1e-30 at most
  (exact zeros, too), so MiniLM's encoder is what was trained (its masked-LM head is new:
  MiniLM ships none)."""
  minilm_dir = str(minilm_dir)
  out = tmp_path / "out"
  pretraining.run(pretraining_options(data, out, bert_config_file=None,
                                      init_checkpoint=minilm_dir, train_batch_size=4,
                                      learning_rate=1e-30, num_train_steps=2,
                                      save_checkpoints_steps=2, iterations_per_loop=2))
  stored = modeling.load_config(str(out / "bert_config.json"))
  assert stored == modeling.load_config(minilm_dir) and stored.hidden_act == "gelu_exact"
  np.testing.assert_allclose(checkpoint_word_embeddings(out, 30522),
                             minilm_word_embeddings(minilm_dir), rtol=1e-6, atol=1e-25)
  with pytest.raises(modeling.ConfigError, match="pass bert_config_file"):
    pretraining.run(pretraining_options(data, tmp_path / "o2", bert_config_file=None))


def first_losses(data, output_dir, **flags):
  input_file, _, nodrop = data
  pretraining.run(pretraining_options((input_file, nodrop, nodrop), output_dir,
                                      num_train_steps=6, log_steps=1, save_checkpoints_steps=6,
                                      iterations_per_loop=6, **flags))
  losses = summaries.read_scalars(str(output_dir))["loss"]
  return np.array([losses[step] for step in sorted(losses)])


@pytest.mark.slow
def test_xla_gives_the_same_losses_and_bfloat16_trains(data, tmp_path):
  # The same initial weights for every run: a warm start from one checkpoint.
  tf_keras.utils.set_random_seed(1)
  model = modeling.build_pretraining_model(modeling.BertConfig.from_json_file(data[2]),
                                           seq_length=SEQ, max_predictions_per_seq=PRED)
  init = modeling.new_checkpoint(model).save(str(tmp_path / "init" / "ckpt"))
  base = first_losses(data, tmp_path / "f32", init_checkpoint=str(init))
  xla = first_losses(data, tmp_path / "xla", init_checkpoint=str(init), use_xla=True)
  # Without dropout, fused kernels only change float32 rounding.
  np.testing.assert_allclose(xla, base, rtol=1e-4)
  bf16 = first_losses(data, tmp_path / "bf16", init_checkpoint=str(init),
                      dtype="mixed_bfloat16", learning_rate=5e-3)
  # bfloat16 activations (8 bits of mantissa): the first loss agrees to ~1%,
  # and training moves the loss down.
  assert bf16[0] == pytest.approx(base[0], rel=2e-2)
  assert np.all(np.isfinite(bf16)) and bf16[-1] < bf16[0] - 0.1, bf16


def _first_file(data):
  return sorted(glob.glob(data[0]))[0]


def _short_among_good(data, tmp_path):
  """A file whose records have another length, among good ones."""
  write_records(tmp_path / "short.tfrecord", _records(32))
  return dict(input_file=f"{_first_file(data)},{tmp_path / 'short.tfrecord'}")


def _cut_in_a_header(data, tmp_path):
  """A copy cut inside a record header (TensorFlow's reader would stop there silently)."""
  with open(_first_file(data), "rb") as f:
    (tmp_path / "cut.tfrecord").write_bytes(f.read()[:-5])
  return dict(input_file=str(tmp_path / "cut.tfrecord"))


def _flipped_byte(data, tmp_path):
  """A copy with a flipped byte deep inside."""
  with open(_first_file(data), "rb") as f:
    data_bytes = f.read()
  middle = len(data_bytes) // 2
  (tmp_path / "flip.tfrecord").write_bytes(
      data_bytes[:middle] + bytes([data_bytes[middle] ^ 1]) + data_bytes[middle + 1:])
  return dict(input_file=str(tmp_path / "flip.tfrecord"))


def _text_file(data, tmp_path):
  del data
  (tmp_path / "text.tfrecord").write_text("not a record file\n")
  return dict(input_file=str(tmp_path / "text.tfrecord"))


def _small_vocab(data, tmp_path):
  """The model's config against the data: ids past its vocabulary."""
  small = modeling.BertConfig.from_json_file(data[1]).replace(vocab_size=100)
  (tmp_path / "small.json").write_text(small.to_json_string())
  return dict(bert_config_file=str(tmp_path / "small.json"))


def _nan_records(data, tmp_path):
  """Records that make the loss NaN: training stops at once."""
  del data
  write_records(tmp_path / "nan.tfrecord", dict(
      _records(SEQ), input_ids=np.ones([2, SEQ], np.int64),
      input_mask=np.ones([2, SEQ], np.int64),
      masked_lm_weights=np.full([2, PRED], np.nan, np.float32)))
  return dict(input_file=str(tmp_path / "nan.tfrecord"), train_batch_size=2)


def _records(length):
  """Two all-zero records of Google's pre-training features, `length` tokens each."""
  ref = {name: np.zeros([2, length], np.int64) for name in ("input_ids", "input_mask",
                                                           "segment_ids")}
  ref.update(masked_lm_positions=np.zeros([2, PRED], np.int64),
             masked_lm_ids=np.zeros([2, PRED], np.int64),
             masked_lm_weights=np.ones([2, PRED], np.float32),
             next_sentence_labels=np.zeros([2, 1], np.int64))
  return ref


@pytest.mark.parametrize("flags, error, message", [
    pytest.param(lambda data, tmp: dict(max_seq_length=128), fileio.InputError,
                 r"a\.tfrecord: record 1 does not match: feature 'input_ids' has length 64, "
                 r"expected 128 \(--max_seq_length=128\)", id="max_seq_length"),
    pytest.param(lambda data, tmp: dict(max_predictions_per_seq=20), fileio.InputError,
                 r"'masked_lm_positions' has length 10, expected 20 "
                 r"\(--max_predictions_per_seq=20\)", id="max_predictions_per_seq"),
    pytest.param(lambda data, tmp: dict(max_seq_length=256), modeling.ConfigError,
                 "Cannot use sequence length 256 because the BERT model was only trained up "
                 "to sequence length 128", id="longer_than_the_model"),
    pytest.param(_short_among_good, fileio.InputError,
                 r"short\.tfrecord: .*'input_ids' has length 32, expected 64",
                 id="short_file_among_good"),
    pytest.param(_cut_in_a_header, fileio.InputError,
                 r"cut\.tfrecord: record \d+ \(at byte \d+\) is cut: the file ends",
                 id="cut_in_a_header"),
    pytest.param(_flipped_byte, fileio.InputError,
                 r"flip\.tfrecord: record \d+ \(at byte \d+\) is damaged", id="flipped_byte"),
    pytest.param(_text_file, fileio.InputError, r"text\.tfrecord: not a TFRecord file",
                 id="text_file"),
    pytest.param(_small_vocab, fileio.InputError,
                 r"a\.tfrecord: record 1 does not match: feature 'input_ids' holds \d+, "
                 r"outside \[0, 100\) \(the model's vocab_size", id="ids_past_the_vocab"),
    pytest.param(lambda data, tmp: dict(input_file=str(tmp / "none*.rec")), fileio.InputError,
                 "matches no file", id="no_input_file"),
    pytest.param(lambda data, tmp: dict(bert_config_file=str(tmp / "no.json")),
                 modeling.ConfigError, "cannot read BERT config", id="no_config_file"),
    pytest.param(_nan_records, loop.NonFiniteLossError,
                 "Loss is nan at global step 0: stopped", id="nan_loss"),
])
def test_bad_inputs_fail_before_training_with_clear_errors(data, tmp_path, flags, error, message):
  """Each is refused with one clear error, and no checkpoint is written."""
  with pytest.raises(error, match=message):
    pretraining.run(pretraining_options(data, tmp_path / "out", **flags(data, tmp_path)))
  assert not glob.glob(str(tmp_path / "out" / "model.ckpt*"))


def _set_value(name, position, value):
  return lambda feature: feature[name].int64_list.value.__setitem__(position, value)


@pytest.mark.parametrize("change, message", [
    pytest.param(_set_value("input_ids", 3, 5000), r"record 301 does not match: feature "
                 r"'input_ids' holds 5000, outside \[0, 2231\)", id="input_id_past_the_vocab"),
    pytest.param(_set_value("masked_lm_ids", 0, -1), r"record 301 does not match: feature "
                 r"'masked_lm_ids' holds -1", id="negative_masked_lm_id"),
    pytest.param(_set_value("masked_lm_positions", 0, SEQ), r"record 301 does not match: "
                 rf"feature 'masked_lm_positions' holds {SEQ}, outside \[0, {SEQ}\) "
                 r"\(--max_seq_length\)", id="masked_lm_position_past_the_sequence"),
    pytest.param(_set_value("segment_ids", 0, 2), r"record 301 does not match: feature "
                 r"'segment_ids' holds 2, outside \[0, 2\) \(the model's type_vocab",
                 id="segment_id_past_type_vocab"),
    pytest.param(lambda feature: feature["input_mask"].int64_list.value.append(1),
                 r"record 301 does not match: feature 'input_mask' has length 65, expected 64",
                 id="longer_input_mask"),
])
def test_every_record_is_checked_before_training(data, tmp_path, monkeypatch, change, message):
  """A later record that training would fail on (an id outside the embeddings, another
  length) is named by file and record number, across parse batches and files."""
  monkeypatch.setattr(inputs, "CHECK_BATCH", 64)
  first, second = sorted(glob.glob(data[0]))
  bad = copy_records_with_one_changed(second, tmp_path / "bad.tfrecord", 300, change)
  with pytest.raises(fileio.InputError, match=rf"bad\.tfrecord: {message}"):
    pretraining.run(pretraining_options(data, tmp_path / "out", input_file=f"{first},{bad}"))
  assert not glob.glob(str(tmp_path / "out" / "model.ckpt*"))

