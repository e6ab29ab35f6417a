"""build_squad_model: run_squad's span layer (`cls/squad`) on the sequence output."""

import numpy as np
import tensorflow as tf

import modeling
from modeling.checkpoints import names
from tests.tiny_models import TINY_BERT, bert_inputs


def test_logits_are_the_span_layer_over_every_position():
  model = modeling.build_squad_model(TINY_BERT, seq_length=16)
  head = model.get_layer("cls_squad")
  feats = bert_inputs(seq=16)
  outputs = model(feats)
  sequence = model.get_layer("bert")(feats)["sequence_output"].numpy()  # [3, 16, 32]
  expected = sequence @ head.output_weights.numpy().T + head.output_bias.numpy()  # [3, 16, 2]
  np.testing.assert_allclose(outputs["start_logits"], expected[..., 0], atol=1e-5)
  np.testing.assert_allclose(outputs["end_logits"], expected[..., 1], atol=1e-5)
  assert outputs["start_logits"].dtype == tf.float32


def test_google_variable_names_round_trip(tmp_path):
  model = modeling.build_squad_model(TINY_BERT, seq_length=16)
  variables = names.model_variables(model)
  assert variables["cls/squad/output_weights"].shape == (2, 32)
  assert variables["cls/squad/output_bias"].shape == (2,)
  prefix = modeling.save_google_checkpoint(model, tmp_path / "squad.ckpt")
  assert tf.train.load_checkpoint(prefix).get_variable_to_shape_map()[
      "cls/squad/output_weights"] == [2, 32]
  other = modeling.build_squad_model(TINY_BERT, seq_length=16)
  report = modeling.load_checkpoint(other, prefix)
  assert report.heads_absent == []
  feats = bert_inputs(seq=16)
  np.testing.assert_allclose(other(feats)["end_logits"], model(feats)["end_logits"], atol=1e-6)


def test_a_pretrained_checkpoint_leaves_the_span_layer_initialized(shared_dir):
  tiny = shared_dir / "fixtures" / "google_bert_tiny"
  config = modeling.BertConfig.from_json_file(tiny / "bert_config.json")
  model = modeling.build_squad_model(config, seq_length=16)
  report = modeling.load_checkpoint(model, tiny / "bert_model.ckpt")
  assert report.heads_absent == [names.HEAD_LABELS["cls_squad"]]
