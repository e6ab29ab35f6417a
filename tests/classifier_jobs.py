"""run_classifier's test jobs: a tiny random-init model on sample_data/sentiment, or
Google's tiny checkpoint on a slice of a GLUE folder; what its SavedModel's call ops hold."""

import os

from tensorflow.core.protobuf import saved_model_pb2

from classification import run as classification_run
from tests.paths import SAMPLE
from tests.tiny_models import tiny_config_file


def slice_glue(shared_dir, folder, target, rows):
  """A copy of a GLUE folder with the header + first `rows` rows of each file."""
  os.makedirs(target)
  for name in ("train.tsv", "dev.tsv", "test.tsv"):
    with open(shared_dir / "data" / "glue" / folder / name, encoding="utf-8") as f:
      lines = [line for _, line in zip(range(rows + 1), f)]
    with open(os.path.join(target, name), "w", encoding="utf-8") as f:
      f.writelines(lines)
  return target


def classifier_options(tmp_path, **kwargs):
  """Options to train a tiny random-init model on sample_data/sentiment (SST-2's format)."""
  config = tiny_config_file(tmp_path / "bert_config.json", 2231)
  defaults = dict(task_name="sst-2", data_dir=str(SAMPLE / "sentiment"),
                  vocab_file=str(SAMPLE / "vocab.txt"), output_dir=str(tmp_path / "out"),
                  bert_config_file=config, do_train=True, max_seq_length=32)
  defaults.update(kwargs)
  return classification_run.ClassifierOptions(**defaults)


def google_tiny_options(shared_dir, tmp_path, task_name, folder, rows, **kwargs):
  """Options for a run from Google's tiny checkpoint on the first `rows` rows of a GLUE folder."""
  tiny = shared_dir / "fixtures" / "google_bert_tiny"
  data = slice_glue(shared_dir, folder, str(tmp_path / "data"), rows)
  defaults = dict(task_name=task_name, data_dir=data, vocab_file=str(tiny / "vocab.txt"),
                  output_dir=str(tmp_path / "out"), init_checkpoint=str(tiny / "bert_model.ckpt"),
                  do_train=True, train_batch_size=8, num_train_epochs=1, seed=1)
  defaults.update(kwargs)
  return classification_run.ClassifierOptions(**defaults)


def saved_call_attributes(export_dir, attribute):
  """[the `attribute` (AttrValue) of every function call op in a SavedModel's functions]."""
  saved = saved_model_pb2.SavedModel()
  with open(os.path.join(export_dir, "saved_model.pb"), "rb") as f:
    saved.ParseFromString(f.read())
  return [node.attr[attribute]
          for function in saved.meta_graphs[0].graph_def.library.function
          for node in function.node_def if node.op.endswith("PartitionedCall")]


def xla_compiled_calls(export_dir):
  """How many function call ops in a SavedModel's functions XLA must compile."""
  return sum(value.b for value in saved_call_attributes(export_dir, "_XlaMustCompile"))
