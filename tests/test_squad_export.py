"""run_squad's SavedModel (`squad.export`): serve_qa against the run's own predictions.json.

Runs predict + export from Google's tiny checkpoint (an untrained span layer,
seeded) at max_seq_length 64, doc_stride 16, max_query_length 16, so that
every context takes several windows; the export is served in a process that
imports only tensorflow and tensorflow_text.
"""

import json
import os
import subprocess
import sys

import pytest
import tensorflow as tf

import cli
from squad import export, run
from tests.paths import REPO
from tests.squad_fixtures import serve_qa, squad_questions, write_json
from tokenization.in_graph import InGraphTokenizer

SAVED_MODEL_CLI = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
SETTINGS = dict(max_seq_length=64, doc_stride=16, max_query_length=16)

# A paragraph of our own: whitespace other than one space between words, an
# accent written as a combining mark, a soft hyphen, CJK and a long question.
OWN_CONTEXT = ("The  café\u0301 opened in 1990,\nrun by Zoë Ku\u00adroda.\tIts menu lists "
               "日本茶 and coffee; prices start at $3.50 a cup. ") * 3
OWN_PARAGRAPH = {
    "context": OWN_CONTEXT,
    "qas": [{"id": f"own{i}", "question": q,
             "answers": [{"text": "1990", "answer_start": OWN_CONTEXT.index("1990")}]}
            for i, q in enumerate([
                "When did the café open?", "Who runs it?", "What does the menu list?",
                "How much is a cup of coffee at the café that opened in 1990 and is run by "
                "Zoë Kuroda, who also sells tea?"])],
}


def _squad_subset(source, target, paragraphs, own=False):
  """The first `paragraphs` paragraphs of `source`'s first article (+ OWN_PARAGRAPH)."""
  with open(source, encoding="utf-8") as f:
    article = json.load(f)["data"][0]
  article["paragraphs"] = article["paragraphs"][:paragraphs] + ([OWN_PARAGRAPH] if own else [])
  return write_json(target, {"version": "subset", "data": [article]})


def _run(shared_dir, tmp_path, predict_file, **overrides):
  """run_squad predict + export on the tiny checkpoint -> (output_dir, export_dir)."""
  tiny = shared_dir / "fixtures" / "google_bert_tiny"
  values = dict(vocab_file=str(tiny / "vocab.txt"), init_checkpoint=str(tiny / "bert_model.ckpt"),
                predict_file=predict_file, output_dir=str(tmp_path / "out"),
                export_dir=str(tmp_path / "export"), do_predict=True, predict_batch_size=64,
                seed=1, **SETTINGS)
  values.update(overrides)
  run.run_squad(run.SquadOptions(**values))
  return tmp_path / "out", tmp_path / "export"


def _read(path):
  with open(path, encoding="utf-8") as f:
    return json.load(f)


@pytest.fixture(scope="module")
def v1(shared_dir, tmp_path_factory):
  tmp = tmp_path_factory.mktemp("v1")
  predict_file = _squad_subset(shared_dir / "data" / "squad" / "dev-v1.1-a.json",
                               tmp / "predict.json", 2, own=True)
  output_dir, export_dir = _run(shared_dir, tmp, predict_file)
  questions = squad_questions(predict_file)
  served = serve_qa(export_dir, [q for _, q, _ in questions], [c for _, _, c in questions])
  return dict(questions=questions, served=served, export_dir=export_dir,
              predictions=_read(output_dir / "predictions.json"),
              nbest=_read(output_dir / "nbest_predictions.json"))


@pytest.mark.slow
@pytest.mark.multiprocess
def test_serve_qa_answers_as_predictions_json(v1):
  served = v1["served"]
  assert served["modules"] == []
  same = 0
  for i, (qid, _, context) in enumerate(v1["questions"]):
    answer, prediction = served["answer"][i], v1["predictions"][qid]
    assert context[served["start"][i]:served["end"][i]] == answer
    best = v1["nbest"][qid][0]  # the same span: its logits
    assert served["score"][i] == pytest.approx(best["start_logit"] + best["end_logit"], abs=1e-4)
    same += answer == prediction
    # Otherwise Google joined the words with single spaces, or answered with the whole words.
    assert " ".join(answer.split()) in prediction, (qid, answer, prediction)
  assert same >= 0.9 * len(v1["questions"])


@pytest.mark.slow
@pytest.mark.multiprocess
def test_contexts_take_several_windows(v1):
  features = tf.data.TFRecordDataset(str(v1["export_dir"].parent / "out" / "eval.tf_record"))
  assert sum(1 for _ in features) >= 4 * len(v1["questions"])


@pytest.mark.slow
@pytest.mark.multiprocess
def test_saved_model_cli_lists_serve_qa(v1):
  out = subprocess.run([SAVED_MODEL_CLI, "show", "--all", "--dir", str(v1["export_dir"])],
                       capture_output=True, text=True, check=True).stdout
  for name in ("serving_default", "serve_qa"):
    assert f"signature_def['{name}']" in out
  for name in ("question", "context", "answer", "start", "end", "score", "input_ids",
               "start_logits"):
    assert f"['{name}']" in out
  assert "null_score" not in out and "has_answer" not in out
  assert sorted(os.listdir(v1["export_dir"] / "assets")) == [export.SETTINGS_FILE, "vocab.txt"]


@pytest.mark.slow
@pytest.mark.multiprocess
def test_v2_has_answer_follows_googles_null_rule(shared_dir, tmp_path):
  """With the tuned threshold, as the predictions were written; an empty context has none."""
  predict_file = _squad_subset(shared_dir / "data" / "squad" / "dev-v2.0-a.json",
                               tmp_path / "predict.json", 2)
  output_dir, export_dir = _run(shared_dir, tmp_path, predict_file, version_2_with_negative=True,
                                tune_null_threshold=True)
  questions = squad_questions(predict_file)
  served = serve_qa(export_dir, [q for _, q, _ in questions] + ["Why?"],
                  [c for _, _, c in questions] + [""])
  predictions = _read(output_dir / "predictions.json")
  null_odds = _read(output_dir / "null_odds.json")
  for i, (qid, _, _) in enumerate(questions):
    assert served["has_answer"][i] == (predictions[qid] != ""), qid
    assert served["null_score"][i] - served["score"][i] == pytest.approx(null_odds[qid], abs=1e-4)
  assert False in served["has_answer"][:-1]
  assert served["answer"][-1] == "" and served["start"][-1] == served["end"][-1] == 0
  assert served["has_answer"][-1] is False and served["score"][-1] == -float("inf")


def test_offsets_cover_each_pieces_characters(google_vocab):
  texts = ["Hello, World!  Unaffable", "Café cafe\u0301 co\u00adoperate ΑΣ İstanbul",
           "日本語 1990,", "x" * 201 + " ok", b"ab\xffcd", ""]
  tokenizer = InGraphTokenizer(google_vocab)
  ids, starts, ends = tokenizer.tokenize_with_offsets(tf.constant(texts))
  assert ids.to_list() == tokenizer.tokenize(tf.constant(texts)).to_list()
  pieces = [[text[s:e] for s, e in zip(row_starts, row_ends)] for text, row_starts, row_ends in
            zip([t.decode("utf-8", "ignore") if isinstance(t, bytes) else t for t in texts],
                starts.to_list(), ends.to_list())]
  assert pieces == [
      ["Hello", ",", "World", "!", "Una", "ffa", "ble"],
      ["Café", "cafe\u0301", "co\u00adoperate", "Α", "Σ", "İstanbul"],
      ["日", "本", "語", "1990", ","], ["x" * 201, "ok"], ["abc", "d"], []]


def test_squad_options_accept_export_dir_alone(shared_dir, tmp_path):
  tiny = shared_dir / "fixtures" / "google_bert_tiny"
  run.SquadOptions(vocab_file=str(tiny / "vocab.txt"), output_dir=str(tmp_path / "out"),
                   export_dir=str(tmp_path / "export"))
  with pytest.raises(cli.FlagError, match="At least one of `do_train` or `do_predict`"):
    run.SquadOptions(vocab_file=str(tiny / "vocab.txt"), output_dir=str(tmp_path / "out"))


def _options(shared_dir, tmp_path, export_dir, **overrides):
  tiny = shared_dir / "fixtures" / "google_bert_tiny"
  return run.SquadOptions(vocab_file=str(tiny / "vocab.txt"),
                          init_checkpoint=str(tiny / "bert_model.ckpt"),
                          output_dir=str(tmp_path / "out"), export_dir=str(export_dir),
                          **SETTINGS, **overrides)


def test_export_dir_is_checked_before_any_work(shared_dir, tmp_path):
  """Not ours (a directory of the user's, a classifier export), or inside output_dir: refused."""
  mine = tmp_path / "home"
  mine.mkdir()
  (mine / "notes.txt").write_text("keep me")
  with pytest.raises(cli.FlagError, match=r"--export_dir '.*home' exists and is not a "
                     r"SavedModel written by run_squad: nothing was touched"):
    run.run_squad(_options(shared_dir, tmp_path, mine))
  classifier = tmp_path / "classifier"
  for name in ("variables", "assets"):
    (classifier / name).mkdir(parents=True)
  (classifier / "saved_model.pb").write_bytes(b"")
  (classifier / "assets" / "label_list.json").write_text("{}")
  with pytest.raises(cli.FlagError, match="is not a SavedModel written by run_squad"):
    run.run_squad(_options(shared_dir, tmp_path, classifier))
  with pytest.raises(cli.FlagError, match="overlaps --output_dir"):
    run.run_squad(_options(shared_dir, tmp_path, tmp_path / "out" / "export"))
  assert os.listdir(mine) == ["notes.txt"] and not (tmp_path / "out").exists()


@pytest.mark.slow
@pytest.mark.multiprocess
def test_cli_exports_alone_and_overwrites_only_when_asked(shared_dir, tmp_path):
  """The first export (no --do_train, no --do_predict) in-process; then the same command
  line, refused (exit 1, one line), and again with --overwrite_export, which exports alone."""
  tiny = shared_dir / "fixtures" / "google_bert_tiny"
  run.run_squad(_options(shared_dir, tmp_path, tmp_path / "export"))
  assert os.path.exists(tmp_path / "export" / "assets" / export.SETTINGS_FILE)
  first = os.path.getmtime(tmp_path / "export" / "saved_model.pb")
  command = [sys.executable, os.path.join(REPO, "run_squad.py"),
             f"--vocab_file={tiny}/vocab.txt", f"--init_checkpoint={tiny}/bert_model.ckpt",
             f"--output_dir={tmp_path}/out", f"--export_dir={tmp_path}/export"] + [
                 f"--{name}={value}" for name, value in SETTINGS.items()]

  def run_cli(*extra):
    return subprocess.run(command + list(extra), capture_output=True, text=True, check=False,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))

  out = run_cli()
  assert out.returncode == 1
  assert "holds a SavedModel: pass --overwrite_export" in out.stderr.strip().splitlines()[-1]
  assert os.path.getmtime(tmp_path / "export" / "saved_model.pb") == first
  out = run_cli("--overwrite_export")
  assert out.returncode == 0, out.stderr[-3000:]
  assert os.path.exists(tmp_path / "export" / "assets" / export.SETTINGS_FILE)
  assert os.path.getmtime(tmp_path / "export" / "saved_model.pb") != first
