"""InputExample and PaddingInputExample, as in Google's `run_classifier.py`."""

import dataclasses


@dataclasses.dataclass
class InputExample:
  """One training/eval/test example.

  `label` is a label string for classification tasks and a float for regression
  (STS-B). Test examples carry a placeholder: the task's first label, or 0.0 for
  regression, as Google's processors do, so they convert like any other example.
  """
  guid: str
  text_a: str
  text_b: str | None = None
  label: str | float | None = None


class PaddingInputExample:
  """A fake example that pads the eval/predict set to a whole number of batches.

  It converts to all-zero features with `is_real_example=0`, so metrics can
  ignore it and the prediction writer drops its output.
  """
