"""BERT pre-training on the `training` machinery: the library behind run_pretraining.py.

Modules: `inputs` (TFRecord files checked up front; the tf.data pipeline),
`task` (model, Google's loss and metrics) and `run` (`RunConfig`, `run`).
"""

from pretraining.inputs import InputError
from pretraining.run import RunConfig, run

__all__ = ["InputError", "RunConfig", "run"]
