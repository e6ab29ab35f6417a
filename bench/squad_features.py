"""SQuAD feature conversion: questions/s of squad.convert_examples_to_features vs Google's.

Converts every question of a SQuAD file (default ../shared/data/squad/dev-v1.1-a.json,
4,961 questions) at 384/128/64, as run_squad.py does for prediction; --training runs
the training conversion on the file with each question's answers cut to the first.
Only the conversion is timed: the examples are read and the tokenizer is built before
it (a fresh tokenizer per run, so no run starts with warm caches). Each side runs
--repeats times and keeps its best time.

Peer, in the same run when installed: Google's run_squad.py as released on PyPI in
bert-tensorflow 1.0.4 (in bench/requirements.txt), with its own tokenization.py and again with our FullTokenizer.
Its modeling/optimization modules import TF1-only code that conversion does not use,
so empty modules stand in for them. Google's features must equal ours field by field:
the run fails otherwise. Without the package, ours is measured alone.

  python bench/squad_features.py [--input_file=FILE] [--training] [--repeats=3]
"""

import argparse
import json
import os
import sys
import tempfile
import time
import types

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import squad  # pylint: disable=wrong-import-position
from tests.squad_fixtures import (  # pylint: disable=wrong-import-position
    first_answers_only, write_json)
from tokenization import FullTokenizer  # pylint: disable=wrong-import-position

SHARED = os.path.join(REPO, "..", "shared")
FIELDS = ("unique_id", "example_index", "doc_span_index", "tokens", "token_to_orig_map",
          "token_is_max_context", "input_ids", "input_mask", "segment_ids")
LABELS = ("start_position", "end_position", "is_impossible")


def google_run_squad():
  """Google's run_squad and tokenization modules from bert-tensorflow, or None."""
  try:
    import bert  # pylint: disable=import-outside-toplevel
  except ImportError:
    return None
  for name in ("modeling", "optimization"):
    module = types.ModuleType(f"bert.{name}")
    sys.modules[module.__name__] = module
    setattr(bert, name, module)
  from bert import run_squad, tokenization  # pylint: disable=import-outside-toplevel
  run_squad.FLAGS(["run_squad"])  # its flags' defaults; version_2_with_negative is set per run
  run_squad.tf.logging.set_verbosity(run_squad.tf.logging.WARN)  # no per-example log lines
  return run_squad, tokenization


def first_answers_file(path, directory):
  """A copy of a SQuAD file with every question's answers cut to the first (training input)."""
  with open(path, encoding="utf-8") as f:
    data = first_answers_only(json.load(f))
  return write_json(os.path.join(directory, "first_answers.json"), data)


def best_time(convert, make_tokenizer, repeats):
  """(best seconds, features of the last run) of convert(tokenizer) over `repeats` runs."""
  best = float("inf")
  for _ in range(repeats):
    tokenizer = make_tokenizer()
    start = time.perf_counter()
    features = convert(tokenizer)
    best = min(best, time.perf_counter() - start)
  return best, features


def assert_same_features(ours, google, is_training):
  assert len(ours) == len(google), (len(ours), len(google))
  for a, b in zip(ours, google):
    for field in FIELDS + (LABELS if is_training else ()):
      assert getattr(a, field) == getattr(b, field), (a.unique_id, field)


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--input_file", default=os.path.join(SHARED, "data/squad/dev-v1.1-a.json"))
  parser.add_argument("--vocab_file",
                      default=os.path.join(SHARED, "fixtures/google_bert_tiny/vocab.txt"))
  parser.add_argument("--max_seq_length", type=int, default=384)
  parser.add_argument("--doc_stride", type=int, default=128)
  parser.add_argument("--max_query_length", type=int, default=64)
  parser.add_argument("--version_2_with_negative", action="store_true")
  parser.add_argument("--training", action="store_true")
  parser.add_argument("--repeats", type=int, default=3)
  args = parser.parse_args()
  settings = (args.max_seq_length, args.doc_stride, args.max_query_length, args.training)

  with tempfile.TemporaryDirectory() as tmp:
    path = first_answers_file(args.input_file, tmp) if args.training else args.input_file
    examples, _ = squad.read_squad_examples(path, args.training, args.version_2_with_negative)
    seconds, features = best_time(
        lambda tok: squad.convert_examples_to_features(examples, tok, *settings),
        lambda: FullTokenizer(args.vocab_file, do_lower_case=True), args.repeats)
    n = len(examples)
    print(f"{os.path.basename(args.input_file)}: {n:,} questions -> {len(features):,} features "
          f"at {args.max_seq_length}/{args.doc_stride}/{args.max_query_length}, "
          f"{'training' if args.training else 'eval'} mode, best of {args.repeats}")
    print(f"  {'ours':<34} {seconds:7.2f} s {n / seconds:9,.0f} questions/s")
    google = google_run_squad()
    if google is None:
      print("  peer: not installed (pip install --no-deps bert-tensorflow==1.0.4); ours only")
      return
    run_squad, google_tokenization = google
    run_squad.FLAGS.version_2_with_negative = args.version_2_with_negative
    google_examples = run_squad.read_squad_examples(path, args.training)

    def google_convert(tokenizer):
      out = []
      run_squad.convert_examples_to_features(google_examples, tokenizer, *settings, out.append)
      return out
    peers = (("Google run_squad.py (as released)",
              lambda: google_tokenization.FullTokenizer(args.vocab_file, do_lower_case=True)),
             ("Google run_squad.py + our tokenizer",
              lambda: FullTokenizer(args.vocab_file, do_lower_case=True)))
    for name, make_tokenizer in peers:
      peer_seconds, peer_features = best_time(google_convert, make_tokenizer, args.repeats)
      assert_same_features(features, peer_features, args.training)
      print(f"  {name:<34} {peer_seconds:7.2f} s {n / peer_seconds:9,.0f} questions/s   "
            f"ours {peer_seconds / seconds:.1f}x faster, features identical")


if __name__ == "__main__":
  main()
