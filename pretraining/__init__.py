"""BERT pre-training as a task on the `training` runner: the library behind run_pretraining.py.

Modules: `inputs` (TFRecord files checked up front), `dynamic_masking`
(Google's masking in the tf.data pipeline, for unmasked records), `task` (model,
Google's loss and metrics on the shared TFRecord pipeline) and `run`
(`PretrainingOptions`, `run`).
"""

from pretraining.run import PretrainingOptions, run
from pretraining.task import PretrainingTask

__all__ = ["PretrainingOptions", "PretrainingTask", "run"]
