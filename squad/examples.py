"""SQuAD JSON -> SquadExamples, exactly as Google's `read_squad_examples` in run_squad.py.

The context is split into words on Google's whitespace set (space, tab, CR, LF
and U+202F; not U+00A0 or other Unicode spaces) and answers are located at the
word level from their character offset. A training answer whose text is not
among the words found there is skipped with Google's warning
(`Could not find answer: ...`); its id is returned so callers can report it.

Where Google would crash or silently misread (a missing key, an answer offset
outside the context, unanswerable questions without the SQuAD 2.0 flag), this
reader raises `SquadFormatError` naming the file and the question.
"""

import bisect
import dataclasses
import re

from absl import logging

from cli import UserError
import fileio

# A word: a maximal run of characters outside Google's whitespace set.
_WORD = re.compile("[^ \t\r\n\u202f]+")


class SquadFormatError(UserError, ValueError):
  """A SQuAD file that is missing, not JSON, or not laid out as SQuAD for this mode."""


@dataclasses.dataclass
class SquadExample:
  """One question on one context, with Google's field names.

  `doc_tokens` are the context's whitespace-separated words; the questions of
  one paragraph share the same list. `start_position`/`end_position` index
  `doc_tokens` (-1 for unanswerable questions); the answer fields are set only
  when training.
  """
  qas_id: str
  question_text: str
  doc_tokens: list
  orig_answer_text: str | None = None
  start_position: int | None = None
  end_position: int | None = None
  is_impossible: bool = False


def read_squad_examples(input_file, is_training, version_2_with_negative=False):
  """Reads a SQuAD v1.1/v2.0 file (local or gs://) -> (examples, skipped_qas_ids).

  When training, every answerable question must have exactly one answer, and
  `is_impossible` is read only with `version_2_with_negative` (Google's rule:
  in eval mode every example has `is_impossible=False` and no answer).
  `skipped_qas_ids` lists the training questions dropped because their answer
  text is not at their `answer_start` (a warning is logged for each).
  """
  return examples_from_dataset(read_squad_file(input_file), input_file, is_training,
                               version_2_with_negative)


def read_squad_file(path):
  """The parsed JSON of a SQuAD file (local or gs://), which must be an object."""
  data = fileio.read_json(path, SquadFormatError, "SQuAD file")
  if not isinstance(data, dict):
    raise SquadFormatError(f"{path}: not a SQuAD file (expected a JSON object with a "
                           "'data' list of articles)")
  return data


def examples_from_dataset(dataset, input_file, is_training, version_2_with_negative=False):
  """`read_squad_examples` on the parsed JSON of `input_file` (`read_squad_file`).

  Questions to predict on a context with no word get Google's placeholder answer
  ("empty", or "" for SQuAD 2.0): a warning names them.
  """
  examples, skipped, no_context = [], [], []
  for article in _get(dataset, "data", list, input_file):
    for paragraph in _get(article, "paragraphs", list, input_file):
      context = _get(paragraph, "context", str, input_file)
      words = list(_WORD.finditer(context))
      doc_tokens = [w.group() for w in words]
      word_starts = [w.start() for w in words]
      for qa in _get(paragraph, "qas", list, input_file):
        qas_id = _get(qa, "id", str, input_file)
        where = f"{input_file}, question {qas_id}"
        example = SquadExample(qas_id, _get(qa, "question", str, where), doc_tokens)
        if qa.get("is_impossible") and not version_2_with_negative:
          raise SquadFormatError(f"{where}: an unanswerable (SQuAD 2.0) question in a file read "
                                 "as SQuAD 1.1; pass --version_2_with_negative")
        if is_training:
          if version_2_with_negative:
            example.is_impossible = _get(qa, "is_impossible", bool, where, False)
          if example.is_impossible:
            example.orig_answer_text, example.start_position, example.end_position = "", -1, -1
          elif not _locate_answer(example, qa, context, word_starts, where):
            skipped.append(qas_id)
            continue
        if not doc_tokens and not is_training:
          no_context.append(qas_id)
        examples.append(example)
  if no_context:
    logging.warning("%s: %d question(s) have an empty context, so no answer can be found "
                    "(the prediction is Google's placeholder): %s%s", input_file, len(no_context),
                    ", ".join(no_context[:20]), ", ..." if len(no_context) > 20 else "")
  return examples, skipped


_JSON_TYPES = {list: "a list", str: "a string", int: "an integer", bool: "true or false"}
_REQUIRED = object()


def _get(obj, key, kind, where, default=_REQUIRED):
  """obj[key], checked to be a `kind`; `default` (when given) if the key is absent."""
  if not isinstance(obj, dict):
    raise SquadFormatError(f"{where}: not in SQuAD layout: expected an object with {key!r}, "
                           f"found {type(obj).__name__}")
  if key not in obj:
    if default is not _REQUIRED:
      return default
    raise SquadFormatError(f"{where}: not in SQuAD layout: {key!r} is missing")
  value = obj[key]
  if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
    raise SquadFormatError(f"{where}: not in SQuAD layout: {key!r} should be "
                           f"{_JSON_TYPES[kind]}, found {value!r:.40}")
  return value


def _locate_answer(example, qa, context, word_starts, where):
  """Sets the word-level answer span of a training example; False if Google would skip it.

  The span covers the words holding the answer's first and last characters; the
  example is kept only if the answer's whitespace-normalised text is a
  substring of those words joined by spaces.
  """
  answers = _get(qa, "answers", list, where)
  if len(answers) != 1:
    raise SquadFormatError(f"{where}: a training question must have exactly 1 answer, found "
                           f"{len(answers)} (SQuAD dev files list several: train on a "
                           "training file)")
  text = _get(answers[0], "text", str, where)
  offset = _get(answers[0], "answer_start", int, where)
  if not text or offset < 0 or offset + len(text) > len(context):
    raise SquadFormatError(f"{where}: answer {text!r} at answer_start {offset} does not lie "
                           f"inside the context ({len(context)} characters)")
  # Google's char_to_word_offset[c]: the index of the last word starting at or before c.
  start = bisect.bisect_right(word_starts, offset) - 1
  end = bisect.bisect_right(word_starts, offset + len(text) - 1) - 1
  actual_text = " ".join(example.doc_tokens[start:end + 1])
  cleaned_answer_text = " ".join(text.split())
  if cleaned_answer_text not in actual_text:
    logging.warning("Could not find answer: '%s' vs. '%s'", actual_text, cleaned_answer_text)
    return False
  example.orig_answer_text, example.start_position, example.end_position = text, start, end
  return True
