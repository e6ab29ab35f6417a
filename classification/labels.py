"""The label list saved next to a checkpoint/export, so predict runs map ids back to labels."""

import json
import os

from fileio import InputError, atomic_write_text, open_file

LABEL_LIST_FILE = "label_list.json"


def save_label_list(path, labels, is_regression=False):
  """Writes {"labels": [...], "is_regression": bool} atomically.

  `path` is a `.json` file, or else a directory (created if needed) in which
  LABEL_LIST_FILE is written. Returns the file path.
  """
  path = _file_path(path)
  labels = [] if is_regression else [str(l) for l in labels]
  if not is_regression and (not labels or len(set(labels)) != len(labels)):
    raise ValueError(f"a label list needs distinct labels, got {labels}")
  atomic_write_text(path, json.dumps({"labels": labels, "is_regression": bool(is_regression)},
                                     ensure_ascii=False, indent=1) + "\n")
  return path


def load_label_list(path):
  """Reads a label list written by save_label_list: returns (labels, is_regression)."""
  path = _file_path(path)
  try:
    with open_file(path, "rb") as f:
      data = json.loads(f.read())
  except json.JSONDecodeError as e:
    raise InputError(f"{path}: not a label list ({e})") from None
  if (not isinstance(data, dict) or not isinstance(data.get("labels"), list)
      or not isinstance(data.get("is_regression"), bool)
      or not all(isinstance(l, str) for l in data["labels"])):
    raise InputError(f"{path}: not a label list; expected "
                     '{"labels": [strings], "is_regression": true|false}')
  return data["labels"], data["is_regression"]


def _file_path(path):
  """`path` itself when it names a .json file, else LABEL_LIST_FILE inside it."""
  path = os.fspath(path)
  return path if path.endswith(".json") else os.path.join(path, LABEL_LIST_FILE)
