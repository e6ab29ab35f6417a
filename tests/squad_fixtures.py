"""SQuAD inputs for tests: Google's reader fixtures (../shared/fixtures/squad) and
SQuAD files split by article into training and prediction files."""

import json
import os

from squad import read_squad_examples


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
