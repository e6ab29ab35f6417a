"""Google TF1 checkpoints: parity with Google's own outputs, strict loading, writing back."""

import numpy as np
import pytest
import tensorflow as tf

import modeling
from tests.checkpoint_files import read_variables
from tests.tiny_models import pretraining_loss

FEATURES = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions")
TOL = 1e-5  # Against Google's outputs, for every compared output; never loosened.


@pytest.fixture(scope="module")
def tiny_dir(shared_dir):
  return shared_dir / "fixtures" / "google_bert_tiny"


@pytest.fixture(scope="module")
def reference(tiny_dir):
  return dict(np.load(tiny_dir / "reference.npz"))


@pytest.fixture(scope="module")
def config(tiny_dir):
  return modeling.BertConfig.from_json_file(tiny_dir / "bert_config.json")


@pytest.fixture(scope="module")
def loaded(tiny_dir, config):
  model = modeling.build_pretraining_model(config, outputs="all_layers")
  report = modeling.load_google_checkpoint(model, tiny_dir / "bert_model.ckpt")
  return model, report


def _max_diff(ours, theirs, rows=None):
  diff = np.abs(np.asarray(ours, np.float64) - np.asarray(theirs, np.float64))
  return float(diff[rows].max() if rows is not None else diff.max())


def _assert_matches_reference(model, reference):
  """Outputs of every layer and the losses (with the current kernels) against Google's."""
  out = model({k: reference[k] for k in FEATURES})
  real = reference["input_mask"].astype(bool)
  diffs = {
      "embedding_output": _max_diff(out["embedding_output"], reference["embedding_output"], real),
      "sequence_output": _max_diff(out["sequence_output"], reference["sequence_output"], real),
      "pooled_output": _max_diff(out["pooled_output"], reference["pooled_output"]),
      "masked_lm_logits": _max_diff(out["masked_lm_logits"], reference["masked_lm_logits"]),
      "next_sentence_logits": _max_diff(out["next_sentence_logits"],
                                        reference["next_sentence_logits"]),
  }
  for i, layer in enumerate(out["encoder_outputs"]):
    diffs[f"layer_{i}"] = _max_diff(layer, reference["all_encoder_layers"][i], real)
  assert len(out["encoder_outputs"]) == 2
  assert max(diffs.values()) < TOL, diffs
  # Padding positions too (not required, but they agree on this fixture).
  assert _max_diff(out["sequence_output"], reference["sequence_output"]) < TOL

  labels = {k: reference[k] for k in ("masked_lm_ids", "masked_lm_weights",
                                       "next_sentence_labels")}
  losses = pretraining_loss(out, labels)
  for name in ("masked_lm_loss", "next_sentence_loss", "total_loss"):
    assert abs(float(losses[name]) - float(reference[name])) < TOL, name
  _, per_slot, _ = modeling.masked_lm_loss(out["masked_lm_logits"], labels["masked_lm_ids"],
                                           labels["masked_lm_weights"])
  assert _max_diff(per_slot, reference["masked_lm_example_loss"]) < TOL
  _, per_example, _ = modeling.next_sentence_loss(out["next_sentence_logits"],
                                                  labels["next_sentence_labels"])
  assert _max_diff(per_example, reference["next_sentence_example_loss"]) < TOL


def test_outputs_match_googles_reference(loaded, reference):
  _assert_matches_reference(loaded[0], reference)


def test_keras_kernels_load_googles_checkpoint_and_match_its_outputs(tiny_dir, config,
                                                                     reference):
  with modeling.kernels_scope("keras"):
    model = modeling.build_pretraining_model(config, outputs="all_layers")
    report = modeling.load_google_checkpoint(model, tiny_dir / "bert_model.ckpt")
    assert len(report.loaded) == 46 and not report.heads_absent
    _assert_matches_reference(model, reference)


def test_xla_outputs_match_googles_reference(loaded, reference):
  model, _ = loaded
  run = tf.function(lambda f: model(f), jit_compile=True)
  out = run({k: reference[k] for k in FEATURES})
  real = reference["input_mask"].astype(bool)
  assert _max_diff(out["sequence_output"], reference["sequence_output"], real) < TOL
  assert _max_diff(out["masked_lm_logits"], reference["masked_lm_logits"]) < TOL
  assert _max_diff(out["next_sentence_logits"], reference["next_sentence_logits"]) < TOL


def test_report_ignores_optimizer_state(loaded):
  _, report = loaded
  assert len(report.loaded) == 46
  assert not report.heads_absent
  assert len(report.ignored) == 93 and "global_step" in report.ignored
  assert all(n.endswith(("/adam_m", "/adam_v")) for n in report.ignored if n != "global_step")


def test_directory_and_encoder_only(tiny_dir, config, loaded, reference):
  encoder = modeling.build_encoder(config)
  report = modeling.load_google_checkpoint(encoder, tiny_dir)  # a directory works too
  assert len(report.loaded) == 39 and "cls/predictions/output_bias" in report.ignored
  out = encoder({k: reference[k] for k in FEATURES[:3]})
  assert _max_diff(out["pooled_output"], reference["pooled_output"]) < TOL


def test_heads_absent_are_reported(tmp_path, config, loaded):
  model, _ = loaded
  encoder_only = tmp_path / "enc" / "bert_model.ckpt"
  modeling.save_google_checkpoint(model.get_layer("bert"), encoder_only)
  fresh = modeling.build_pretraining_model(config)
  report = modeling.load_google_checkpoint(fresh, encoder_only)
  assert report.heads_absent == ["masked-LM head", "next-sentence head"]
  assert "left as initialized" in report.summary()


def test_google_round_trip(tmp_path, config, loaded, tiny_dir):
  model, _ = loaded
  prefix = tmp_path / "out" / "bert_model.ckpt"
  modeling.save_google_checkpoint(model, prefix, global_step=5)
  assert sorted(p.name for p in prefix.parent.iterdir()) == [
      "bert_model.ckpt.data-00000-of-00001", "bert_model.ckpt.index"]
  ours, googles = read_variables(prefix), read_variables(tiny_dir)
  model_names = [n for n in googles if not n.endswith(("adam_m", "adam_v"))]
  assert sorted(ours) == sorted(model_names)  # same names ...
  for name in model_names:  # ... shapes, dtypes and values
    assert ours[name].dtype == googles[name].dtype, name
    np.testing.assert_array_equal(ours[name], googles[name], err_msg=name)
  # tf.train.load_checkpoint reads it (as Google's init_from_checkpoint does).
  reader = tf.train.load_checkpoint(str(prefix))
  assert reader.get_variable_to_shape_map()["cls/seq_relationship/output_weights"] == [2, 128]
  again = modeling.build_pretraining_model(config)
  modeling.load_google_checkpoint(again, prefix)
  for a, b in zip(model.weights, again.weights):
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_classifier_layer_uses_run_classifier_names(tmp_path, config):
  classifier = modeling.build_classifier(config, 3)
  prefix = modeling.save_google_checkpoint(classifier, tmp_path / "model.ckpt")
  shapes = tf.train.load_checkpoint(prefix).get_variable_to_shape_map()
  assert shapes["output_weights"] == [3, 128] and shapes["output_bias"] == [3]


def test_wrong_vocab_size(tiny_dir, config):
  model = modeling.build_encoder(config.replace(vocab_size=1000))
  with pytest.raises(modeling.CheckpointError,
                     match=r"word_embeddings: checkpoint \[30522, 128\] vs model \[1000, 128\] "
                           r"\(vocab_size 30522 in checkpoint vs 1000 in model\)"):
    modeling.load_google_checkpoint(model, tiny_dir)


def test_wrong_number_of_layers(tiny_dir, config):
  with pytest.raises(modeling.CheckpointError, match=r"checkpoint has 2 layers, model has 3"):
    modeling.load_google_checkpoint(modeling.build_encoder(config.replace(num_hidden_layers=3)),
                                    tiny_dir)
  with pytest.raises(modeling.CheckpointError,
                     match=r"layers, model has 1; unexpected bert/encoder/layer_1/attention/"):
    modeling.load_google_checkpoint(modeling.build_encoder(config.replace(num_hidden_layers=1)),
                                    tiny_dir)


def test_wrong_intermediate_size_is_one_line_naming_the_first_problems(tiny_dir, config):
  model = modeling.build_encoder(config.replace(intermediate_size=256))
  with pytest.raises(modeling.CheckpointError, match=r"\(6 problem\(s\)\): ") as e:
    modeling.load_google_checkpoint(model, tiny_dir)
  assert "bert/encoder/layer_0/intermediate/dense/kernel: checkpoint [128, 512]" in str(e.value)
  assert str(e.value).endswith("; and 3 more") and "\n" not in str(e.value)


def test_non_bert_checkpoint(tmp_path, config):
  prefix = str(tmp_path / "other.ckpt")
  tf.raw_ops.SaveV2(prefix=prefix, tensor_names=["dense/kernel", "global_step"],
                    shape_and_slices=["", ""],
                    tensors=[tf.zeros([3, 4]), tf.constant(1, tf.int64)])
  with pytest.raises(modeling.CheckpointError, match="is not a BERT checkpoint: it has no 'bert/"):
    modeling.load_google_checkpoint(modeling.build_encoder(config), prefix)


def test_missing_and_corrupt_files(tmp_path, config):
  encoder = modeling.build_encoder(config)
  with pytest.raises(FileNotFoundError, match=r"no checkpoint at .*nope.ckpt.*\.index does not"):
    modeling.load_google_checkpoint(encoder, tmp_path / "nope.ckpt")
  with pytest.raises(FileNotFoundError, match="no checkpoint in directory"):
    modeling.load_google_checkpoint(encoder, tmp_path)
  (tmp_path / "bad.ckpt.index").write_bytes(b"not an index")
  with pytest.raises(modeling.CheckpointError, match="cannot read checkpoint .*bad.ckpt"):
    modeling.load_google_checkpoint(encoder, tmp_path / "bad.ckpt")


def test_a_cut_data_file_is_named(tiny_dir, tmp_path, config):
  """The index is whole but the data file was cut (a partial copy): TensorFlow's reader
  raises IndexError, not an OpError."""
  for path in tiny_dir.glob("bert_model.ckpt.*"):
    data = path.read_bytes()
    (tmp_path / path.name).write_bytes(data[:len(data) // 10] if ".data-" in path.name else data)
  with pytest.raises(modeling.CheckpointError, match=r"bert_model\.ckpt: cannot read bert/.* "
                                                     r"the checkpoint's data is cut or damaged"):
    modeling.load_google_checkpoint(modeling.build_encoder(config), tmp_path / "bert_model.ckpt")
