"""SQuAD inputs for tests: Google's reader fixtures (../shared/fixtures/squad),
SQuAD files split by article into training and prediction files, and a SQuAD
export served in a fresh process."""

import json
import os

from squad import read_squad_examples
from tests.processes import run_python


def first_answers_only(data):
  """The training-mode input of the fixtures: every question's answers cut to the first."""
  for article in data["data"]:
    for paragraph in article["paragraphs"]:
      for qa in paragraph["qas"]:
        qa["answers"] = qa["answers"][:1]
  return data


def write_json(path, data):
  with open(path, "w", encoding="utf-8") as f:
    json.dump(data, f)
  return str(path)


def split_squad_articles(path, train_articles, max_questions, directory):
  """(train file, predict file) in `directory`, split by article from the SQuAD file `path`.

  The first `train_articles` articles train (answers cut to the first, as training
  needs); the others predict, at most `max_questions` of them (0: all).
  """
  with open(path, encoding="utf-8") as f:
    data = json.load(f)
  train = first_answers_only({"version": data.get("version"),
                              "data": json.loads(json.dumps(data["data"][:train_articles]))})
  predict, count = [], 0
  for article in data["data"][train_articles:]:
    paragraphs = []
    for paragraph in article["paragraphs"]:
      if max_questions and count >= max_questions:
        break
      qas = paragraph["qas"][:max_questions - count] if max_questions else paragraph["qas"]
      paragraphs.append(dict(paragraph, qas=qas))
      count += len(qas)
    if paragraphs:
      predict.append(dict(article, paragraphs=paragraphs))
  return (write_json(os.path.join(directory, "train.json"), train),
          write_json(os.path.join(directory, "predict.json"),
                     {"version": data.get("version"), "data": predict}))


# The fixture sets, with the flag Google's reader ran under (see fixtures/squad/README.md).
SQUAD_SETS = {"v1_sel128": False, "v1_first20_384": False, "v2_sel128": True, "reader_edge": False}
SQUAD_CASES = [(name, mode) for name in SQUAD_SETS for mode in ("train", "eval")]


def squad_fixture_dir(shared_dir):
  return shared_dir / "fixtures" / "squad"


def read_jsonl(path):
  with open(path, encoding="utf-8") as f:
    return [json.loads(line) for line in f]


def read_squad_fixture_set(shared_dir, tmp_path, name, mode):
  """Our reader on inputs/<name>.json as the fixtures ran Google's -> (examples, skipped ids)."""
  path = squad_fixture_dir(shared_dir) / "inputs" / f"{name}.json"
  if mode == "train":
    with open(path, encoding="utf-8") as f:
      path = write_json(tmp_path / f"{name}.train.json", first_answers_only(json.load(f)))
  return read_squad_examples(str(path), mode == "train", SQUAD_SETS[name])


def serve_qa(export_dir, questions, contexts):
  """The export's serve_qa outputs (lists by name; "modules": the modules of ours it
  imported) in a fresh process importing only tensorflow + tensorflow_text."""
  code = f"""
import json, sys
import tensorflow as tf
import tensorflow_text
m = tf.saved_model.load({str(export_dir)!r})
out = m.signatures["serve_qa"](question=tf.constant({questions!r}),
                               context=tf.constant({contexts!r}))
got = {{k: v.numpy().tolist() for k, v in out.items()}}
got["answer"] = [a.decode("utf-8") for a in got["answer"]]
got["modules"] = [k for k in sys.modules if k.split(".")[0] in (
    "tf_keras", "modeling", "tokenization", "squad", "training")]
print(json.dumps(got))
"""
  return json.loads(run_python(code).strip().splitlines()[-1])


def squad_questions(path):
  """[(id, question, context)] of the SQuAD file `path`, in file order."""
  with open(path, encoding="utf-8") as f:
    return [(qa["id"], qa["question"], paragraph["context"])
            for article in json.load(f)["data"] for paragraph in article["paragraphs"]
            for qa in paragraph["qas"]]
