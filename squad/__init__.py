"""SQuAD data for BERT, as Google's run_squad.py prepares it.

- `examples`: SQuAD v1.1/v2.0 JSON -> `SquadExample`s (`read_squad_examples`);
- `features`: examples -> windowed `InputFeatures` (`convert_examples_to_features`,
  or `generate_features` to stream them), Google's output at a fraction of its time;
- `records`: features -> TFRecord files (`write_features`) and their parse spec
  (`feature_spec`); TensorFlow is imported only when these are called;
- `predictions`: logits -> answers, n-best lists and null odds (Google's search);
- `evaluation`: the official v1.1 / v2.0 metrics (`evaluate_squad.py`);
- `task`, `run`, `export`: the model and loss on the runner, `run_squad.py`'s job, the
  SavedModel that answers raw text; only these import TensorFlow at import time.
"""

from squad.examples import SquadExample, SquadFormatError, read_squad_examples
from squad.features import InputFeatures, convert_examples_to_features, generate_features
from squad.records import feature_spec, write_features

__all__ = [
    "InputFeatures", "SquadExample", "SquadFormatError", "convert_examples_to_features",
    "feature_spec", "generate_features", "read_squad_examples", "write_features",
]
