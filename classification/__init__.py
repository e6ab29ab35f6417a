"""The classification trainer behind `run_classifier.py`: data, features, task, outputs.

Mirrors Google's `run_classifier.py`:
- `processors` / `glue` / `generic` / `registry`: reading GLUE files (and a user's own
  TSV/CSV) into `InputExample`s, looked up by Google's task names;
- `features`: `convert_single_example` and predict-time padding, exactly as Google;
- `tfrecords`: the TFRecord files and their parse spec;
- `metrics`: per-task evaluation metrics in numpy;
- `outputs` / `labels`: `test_results.tsv` and the saved label list;
- `task`: the model, the loss (one function for training and evaluation) and
  eval_results.txt's keys, as a `training.task.Task`;
- `run`: `ClassifierOptions` and the train / eval / predict / export steps;
- `export`: the SavedModel that takes raw text.

The names exported here (processors, features, metrics, outputs) do not import TensorFlow.
"""

from classification.examples import InputExample, PaddingInputExample
from classification.features import (InputFeatures, convert_examples_to_features,
                                     convert_single_example, pad_to_batch_multiple)
from classification.labels import LABEL_LIST_FILE, load_label_list, save_label_list
from classification.metrics import compute_metrics
from classification.outputs import write_test_results
from classification.processors import DataFormatError, DataProcessor
from classification.registry import TASK_NAMES, get_processor

__all__ = [
    "DataFormatError", "DataProcessor", "InputExample", "InputFeatures", "LABEL_LIST_FILE",
    "PaddingInputExample", "TASK_NAMES", "compute_metrics", "convert_examples_to_features",
    "convert_single_example", "get_processor", "load_label_list", "pad_to_batch_multiple",
    "save_label_list", "write_test_results",
]
