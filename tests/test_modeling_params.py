"""Parameter accounting: the published sizes, the built models' counts, the CLI."""

import numpy as np

import modeling
from modeling.params import count_model_parameters, count_parameters, main as params_main
from tests.tiny_models import TINY_BERT


def test_parameter_counts_of_published_sizes():
  base = count_parameters(modeling.BertConfig.preset("base"))
  assert (base["embeddings"], base["layer"], base["pooler"], base["encoder"]) == (
      23_837_184, 7_087_872, 590_592, 109_482_240)
  assert count_parameters(modeling.BertConfig.preset("large"))["encoder"] == 335_141_888


def test_parameter_counts_agree_with_built_model():
  model = modeling.build_pretraining_model(TINY_BERT)
  counted = count_model_parameters(model)
  assert counted == count_parameters(TINY_BERT, heads=True)
  assert counted["total"] == sum(int(np.prod(w.shape)) for w in model.weights)
  classifier = modeling.build_classifier(TINY_BERT, 3)
  assert count_model_parameters(classifier)["classifier"] == 3 * 32 + 3


def test_params_cli(capsys):
  params_main(["--preset", "base"])
  out = capsys.readouterr().out
  assert "encoder                     109,482,240" in out
  assert "layer (each of 12)            7,087,872" in out
