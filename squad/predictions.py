"""SQuAD post-processing: logits -> answer texts, n-best lists and null odds, as Google's run_squad.

`compute_predictions` does the search and returns what Google writes;
`write_predictions` writes it in Google's JSON layout. They are apart so that
an evaluation step can score the predictions without writing files.
"""

import collections
import heapq
import json
import math

from absl import logging
import numpy as np

from fileio import atomic_write_text
from tokenization import BasicTokenizer

RawResult = collections.namedtuple("RawResult", ["unique_id", "start_logits", "end_logits"])
RawResult.__doc__ = "The model's start and end logits, one per position, for feature `unique_id`."

SquadPredictions = collections.namedtuple("SquadPredictions", ["predictions", "nbest", "null_odds"])
SquadPredictions.__doc__ = """What Google writes, as dicts keyed by qas_id in example order.

`predictions`: the answer text; `nbest`: lists of {text, probability,
start_logit, end_logit}; `null_odds`: score_null minus the best non-null
span's score, or None without version_2_with_negative.
"""

_Candidate = collections.namedtuple(
    "_Candidate", ["feature", "start", "end", "start_logit", "end_logit"])
_Entry = collections.namedtuple("_Entry", ["text", "start_logit", "end_logit"])

# Google's stand-in when no span survives the filters.
_EMPTY = _Entry("empty", 0.0, 0.0)


def get_final_text(pred_text, orig_text, do_lower_case, verbose_logging=False):
  """The part of `orig_text` that the normalized `pred_text` covers, or `orig_text` when unsure.

  `pred_text` comes from WordPiece tokens, so it is lower-cased, accent
  stripped and split at punctuation, while the answer should keep the
  original's characters. `orig_text` is put through BasicTokenizer, the
  prediction is found in it, and the match is mapped back character by
  character, ignoring spaces. Like Google, this returns `orig_text` whole when
  the prediction is not found, when the two texts differ in length once spaces
  are dropped (normalization changed a character count), or when the match
  starts or ends on a space (an empty `pred_text` included); with
  `verbose_logging` it logs which (Google's --verbose_logging).
  """
  def unsure(why):
    if verbose_logging:
      logging.info("get_final_text: %s; keeping %r for %r", why, orig_text, pred_text)
    return orig_text

  tok_text = " ".join(BasicTokenizer(do_lower_case=do_lower_case).tokenize(orig_text))
  start = tok_text.find(pred_text)
  if start == -1:
    return unsure(f"unable to find the text in {tok_text!r}")
  end = start + len(pred_text) - 1
  orig_positions = _non_space_positions(orig_text)
  tok_positions = _non_space_positions(tok_text)
  if len(orig_positions) != len(tok_positions):
    return unsure("lengths differ after stripping spaces")
  tok_rank = {position: rank for rank, position in enumerate(tok_positions)}
  if start not in tok_rank or end not in tok_rank:
    return unsure("could not map the start or end position")
  return orig_text[orig_positions[tok_rank[start]]:orig_positions[tok_rank[end]] + 1]


def _non_space_positions(text):
  """Indices of the characters of `text` other than U+0020 (the only space Google skips)."""
  return [i for i, c in enumerate(text) if c != " "]


def compute_predictions(all_examples, all_features, all_results, n_best_size, max_answer_length,
                        do_lower_case, version_2_with_negative=False,
                        null_score_diff_threshold=0.0, verbose_logging=False):
  """Google's n-best search over every window of every example; returns SquadPredictions.

  `all_features` carry Google's InputFeatures fields (example_index,
  unique_id, tokens, token_to_orig_map, token_is_max_context); `all_results`
  are RawResults, one for each feature. With version_2_with_negative every
  example needs a feature. Scores and probabilities are Python floats
  (float64) computed from the logits as given, as Google's were from float32
  model outputs.

  One departure from Google: with version_2_with_negative, an example whose
  n-best has no non-empty text (no span passed the filters) makes Google's
  code raise AttributeError and write nothing. Here it gets HF transformers'
  rule instead: the "empty" entry (logits 0) goes first, so its null odds are
  score_null and it predicts "" when score_null exceeds the threshold.
  """
  features_by_example = collections.defaultdict(list)
  for feature in all_features:
    features_by_example[feature.example_index].append(feature)
  logits_by_id = {result.unique_id: result for result in all_results}

  predictions, all_nbest = {}, {}
  null_odds = {} if version_2_with_negative else None
  for example_index, example in enumerate(all_examples):
    features = features_by_example[example_index]
    if version_2_with_negative and not features:
      # Google fails here too (IndexError): score_null needs a window's [CLS] logits.
      raise ValueError(f"example {example.qas_id} has no features (empty context?), so no "
                       "null score")
    candidates, null_entry = _candidates(
        features, logits_by_id, n_best_size, max_answer_length, version_2_with_negative)
    nbest = _nbest(example, candidates, n_best_size, do_lower_case, verbose_logging)
    if version_2_with_negative:
      if "" not in (entry.text for entry in nbest):
        nbest.append(null_entry)
      if not any(entry.text for entry in nbest):
        nbest.insert(0, _EMPTY)
    elif not nbest:
      nbest.append(_EMPTY)

    probabilities = _softmax([entry.start_logit + entry.end_logit for entry in nbest])
    all_nbest[example.qas_id] = [
        {"text": entry.text, "probability": probability, "start_logit": entry.start_logit,
         "end_logit": entry.end_logit}
        for entry, probability in zip(nbest, probabilities)]
    if version_2_with_negative:
      best = next(entry for entry in nbest if entry.text)
      score_null = null_entry.start_logit + null_entry.end_logit
      score_diff = score_null - best.start_logit - best.end_logit
      null_odds[example.qas_id] = score_diff
      predictions[example.qas_id] = "" if score_diff > null_score_diff_threshold else best.text
    else:
      predictions[example.qas_id] = nbest[0].text
  return SquadPredictions(predictions, all_nbest, null_odds)


def _candidates(features, logits_by_id, n_best_size, max_answer_length, version_2_with_negative):
  """The spans that pass Google's filters, best first, and the null entry (v2; else None).

  Per window, the n_best_size highest start and end positions are paired. A
  pair is kept if both ends are document tokens of the window, the start has
  its maximum context there, and it spans 1 to max_answer_length tokens. The
  null entry is [CLS]'s logits in the window where their sum is lowest; in v2
  it also competes as a candidate (start 0). Sorting is stable, so ties keep
  window, then start-rank, then end-rank order.
  """
  candidates = []
  null = None
  for feature in features:
    result = logits_by_id.get(feature.unique_id)
    if result is None:
      raise ValueError(f"no result for feature unique_id {feature.unique_id}")
    start_logits = np.asarray(result.start_logits).ravel().tolist()
    end_logits = np.asarray(result.end_logits).ravel().tolist()
    if version_2_with_negative and (
        null is None or start_logits[0] + end_logits[0] < null.start_logit + null.end_logit):
      null = _Candidate(feature, 0, 0, start_logits[0], end_logits[0])
    ends = _best_indexes(end_logits, n_best_size)
    for start in _best_indexes(start_logits, n_best_size):
      if start not in feature.token_to_orig_map or not feature.token_is_max_context.get(start):
        continue
      for end in ends:
        if end in feature.token_to_orig_map and start <= end < start + max_answer_length:
          candidates.append(
              _Candidate(feature, start, end, start_logits[start], end_logits[end]))
  if null is not None:
    candidates.append(null)
  candidates.sort(key=lambda c: c.start_logit + c.end_logit, reverse=True)
  return candidates, None if null is None else _Entry("", null.start_logit, null.end_logit)


def _best_indexes(logits, n):
  """Positions of the n largest logits, largest first; the lower position first on ties."""
  return heapq.nlargest(n, range(len(logits)), key=logits.__getitem__)


def _nbest(example, candidates, n_best_size, do_lower_case, verbose_logging):
  """Up to n_best_size entries from the sorted candidates, skipping texts already taken.

  A span's text is its wordpieces joined and de-tokenized ("##" removed,
  whitespace collapsed), mapped onto the original words by get_final_text.
  The null candidate (start 0) gives "" and is taken even if "" was.
  """
  nbest, seen = [], set()
  for candidate in candidates:
    if len(nbest) >= n_best_size:
      break
    if candidate.start > 0:
      feature = candidate.feature
      tok_text = " ".join(feature.tokens[candidate.start:candidate.end + 1])
      tok_text = " ".join(tok_text.replace(" ##", "").replace("##", "").split())
      orig_words = example.doc_tokens[feature.token_to_orig_map[candidate.start]:
                                      feature.token_to_orig_map[candidate.end] + 1]
      text = get_final_text(tok_text, " ".join(orig_words), do_lower_case, verbose_logging)
      if text in seen:
        continue
    else:
      text = ""
    seen.add(text)
    nbest.append(_Entry(text, candidate.start_logit, candidate.end_logit))
  return nbest


def _softmax(scores):
  """Google's softmax in Python floats: exp(score - max) over their sum.

  The sum is a plain left-to-right loop: sum() compensates rounding since
  Python 3.12, which would move the last bits.
  """
  top = max(scores)
  exps = [math.exp(score - top) for score in scores]
  total = 0.0
  for x in exps:
    total += x
  return [x / total for x in exps]


def write_predictions(outputs, output_prediction_file, output_nbest_file,
                      output_null_log_odds_file=None):
  """Writes SquadPredictions as Google's predictions.json, nbest_predictions.json, null_odds.json.

  Each file is `json.dumps(..., indent=4)` plus a newline, written atomically
  (local paths or gs://). null_odds.json is written only for version 2
  outputs, and then `output_null_log_odds_file` is required.
  """
  files = [(output_prediction_file, outputs.predictions), (output_nbest_file, outputs.nbest)]
  if outputs.null_odds is not None:
    if output_null_log_odds_file is None:
      raise ValueError("version 2 predictions need output_null_log_odds_file")
    files.append((output_null_log_odds_file, outputs.null_odds))
  for path, content in files:
    logging.info("Writing %s", path)
    atomic_write_text(path, json.dumps(content, indent=4) + "\n")
