"""build_classifier: run_classifier's output layer on the pooled output."""

import numpy as np
import pytest
import tensorflow as tf

import modeling
from tests.helpers import TINY_BERT, bert_inputs


@pytest.mark.parametrize("num_labels", [3, 1])
def test_classifier(num_labels):
  model = modeling.build_classifier(TINY_BERT, num_labels)
  head = model.get_layer("classifier")
  feats = bert_inputs()
  logits = model(feats)
  assert logits.shape == (3, num_labels) and logits.dtype == tf.float32
  pooled = model.get_layer("bert")(feats)["pooled_output"].numpy()
  expected = pooled @ head.output_weights.numpy().T + head.output_bias.numpy()
  np.testing.assert_allclose(logits, expected, atol=1e-5)
  assert head.output_weights.shape == (num_labels, 32)
  with pytest.raises(ValueError, match="num_labels must be >= 1"):
    modeling.build_classifier(TINY_BERT, 0)
