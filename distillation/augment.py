"""TinyBERT's data augmentation (Jiao et al. 2020, Alg. 1) of a task's training file:
augment_data.py.

Every training row is written as it is, then `n_aug` times with its text
columns rewritten. A text is split into words (`BasicTokenizer`); each word
made of letters is replaced, with probability `p_t`, by one of its candidates
drawn uniformly:
  - a word that is one WordPiece: the masked LM's `top_k` predictions for it,
    in the text with that word, and only it, replaced by [MASK]: the input is
    `[CLS] text [SEP]`, one [MASK] per input, as TinyBERT's. Candidates are
    vocabulary words made of letters (no special tokens, `##` pieces,
    punctuation or numbers), never the word itself;
  - a word of several WordPieces: its `top_k` nearest words (cosine) in a
    GloVe file; without one, or for a word not in it, the word is kept.
Other words (punctuation, numbers) are kept, as the official script keeps
them; it also leaves English stop words alone, which Alg. 1 does not, nor this.
Candidates are found once per word, with the row's original text as context,
and the n_aug rewrites draw from them, as in the official script.

Where the official script (huawei-noah/Pretrained-Language-Model,
TinyBERT/data_augmentation.py) differs:
  - its MLM input is `[CLS] masked text [SEP] original text [SEP]`: the word to
    predict is in plain sight in the second segment. Here it is nowhere;
  - it runs one forward pass per word. Here the masked inputs of many rows
    run in batches (sorted by length, padded to the longest of the batch);
  - a word can be its own candidate there, never here: a word drawn is
    changed, so the share of changed words is p_t. Its candidates can also be
    punctuation or numbers (it drops `##` pieces only);
  - it drops rewrites already written (so fewer than n_aug); here a row gives
    exactly n_aug + 1 rows;
  - a pair task's rows there have one text rewritten, here both (independent draws);
  - words past a text's 512th piece are never replaced there; here the MLM
    input is the `max_seq_length` window of the text centred on the word.

The output has the training file's layout (header, columns, delimiter); the
rewritten texts are their words joined by spaces (lower-cased with
do_lower_case, punctuation split off). A task trains on it with `aug_train`
(`run_classifier.py --aug_train` reads `<data_dir>/train_aug.tsv`). The draws of
row i depend on (seed, i) alone, so a shard (the rows i with i % num_shards ==
shard_index) writes the rows a single run would; each shard is a complete file,
header included: join them keeping one header.
"""

import csv
import dataclasses
import os
import time
from typing import Optional

from absl import logging
import numpy as np
import tensorflow as tf

from classification import registry
from classification.options import DataOptions
from classification.processors import AUG_TRAIN_SPLIT
from cli import FlagError
from cli.options import option, required
import fileio
from fileio.atomic import name_output
import modeling
from modeling.checkpoints.names import HEAD_LABELS
import tokenization
from training import runtime

# Seconds between progress lines.
PROGRESS_INTERVAL = 30.0


@dataclasses.dataclass(frozen=True, kw_only=True)
class AugmentOptions(DataOptions):
  """augment_data.py's flags: the task's data (`task_options` go to its processor, as
  run_classifier's) and these."""
  init_checkpoint: str = required("A BERT checkpoint with its masked-LM head (Google TF1, "
                                  "HuggingFace or ours).")
  output_file: Optional[str] = option(
      None, "Where to write; default: train_aug.tsv beside the training file. With "
      "--num_shards > 1, -<shard_index>-of-<num_shards> is appended.")
  overwrite: bool = option(False, "Replace an existing output file.")
  bert_config_file: Optional[str] = option(
      None, "bert_config.json (or HF config.json). Default: the one stored with "
      "init_checkpoint.")
  p_t: float = option(0.4, "Probability of replacing each word made of letters.")
  n_aug: int = option(20, "Rewrites of each row.")
  top_k: int = option(15, "Candidates per word: masked-LM predictions or GloVe neighbours.")
  glove_file: Optional[str] = option(
      None, "GloVe vectors in text format (`word v1 ... vd` a line), for words of several "
      "WordPieces; without it they are kept.")
  glove_max_words: int = option(
      100000, "Read the first this many GloVe words (the most frequent); 0: all.")
  seed: int = option(12345, "Random seed of the replacements.")
  batch_size: int = option(64, "Masked-LM inputs per forward pass.")
  num_shards: int = option(1, "Split the work over this many processes...")
  shard_index: int = option(0, "...of which this is one (0-based): it augments the rows i "
                            "with i % num_shards == shard_index.")

  def __post_init__(self):
    for name in ("n_aug", "top_k", "batch_size", "num_shards"):
      runtime.check_positive(name, getattr(self, name))
    if not 0.0 <= self.p_t <= 1.0:
      raise FlagError(f"--p_t must be a probability (0 to 1), got {self.p_t}")
    if self.max_seq_length < 3:
      raise FlagError(f"--max_seq_length must be at least 3 ([CLS], a word, [SEP]), got "
                      f"{self.max_seq_length}")
    if not 0 <= self.shard_index < self.num_shards:
      raise FlagError(f"--shard_index must be in [0, --num_shards={self.num_shards}), got "
                      f"{self.shard_index}")
    if self.seed < 0:
      raise FlagError(f"--seed must be >= 0, got {self.seed}")
    if self.glove_max_words < 0:
      raise FlagError(f"--glove_max_words must be >= 0 (0: all), got {self.glove_max_words}")


class MaskedLM:
  """A BERT masked LM ranking the replacements of the one [MASK] of each input.

  `vocab`: the {token: id} vocabulary; only its words made of letters are
  ranked (no special tokens, `##` pieces, punctuation or numbers).
  """

  def __init__(self, config, init_checkpoint, vocab, top_k):
    self.model = modeling.build_pretraining_model(config, max_predictions_per_seq=1,
                                                  outputs="positions")
    report = modeling.load_checkpoint(self.model, init_checkpoint)
    if HEAD_LABELS["cls_predictions"] in report.heads_absent:
      raise modeling.CheckpointError(
          f"{init_checkpoint} has no masked-LM head (cls/predictions): augmentation needs a "
          "pre-trained checkpoint with it, such as Google's BERT releases")
    words = np.array([token.isalpha() for token in vocab])
    if words.sum() <= top_k:
      raise FlagError(f"--top_k {top_k} is not below the {words.sum()} words of the "
                      "vocabulary that can be candidates")
    self._never = tf.constant(np.where(words, 0.0, -np.inf), tf.float32)  # [V]
    self.top_k = top_k
    spec = tf.TensorSpec([None, None], tf.int32)
    self._rank = tf.function(self._rank_graph, input_signature=[
        spec, spec, tf.TensorSpec([None], tf.int32), tf.TensorSpec([None], tf.int32)])

  def rank(self, input_ids, input_mask, positions, originals):
    """The top_k candidate ids [B, top_k], best first, for the [MASK] at `positions` [B] of
    `input_ids` [B, S] (`input_mask` [B, S]), never `originals` [B] (the masked words)."""
    return self._rank(input_ids, input_mask, positions, originals).numpy()

  def _rank_graph(self, input_ids, input_mask, positions, originals):
    outputs = self.model({"input_ids": input_ids, "input_mask": input_mask,
                          "segment_ids": tf.zeros_like(input_ids),
                          "masked_lm_positions": positions[:, tf.newaxis]}, training=False)
    logits = outputs["masked_lm_logits"][:, 0, :] + self._never  # [B, V]
    is_original = tf.one_hot(originals, tf.shape(logits)[1], on_value=True, off_value=False)
    logits = tf.where(is_original, -np.inf, logits)
    return tf.math.top_k(logits, self.top_k).indices


def read_glove(path, max_words=0):
  """(words, vectors [N, d] float32) of a GloVe text file: `word v1 ... vd` a line.

  Reads the first `max_words` words (0: all; GloVe files list frequent words
  first). Lines with more fields than the first line (glove.840B has a few
  "words" with spaces, which no text splits into) are skipped.
  """
  problem = fileio.missing_file(path)
  if problem:
    raise fileio.InputError(f"--glove_file {path!r}: {problem}")
  words, vectors, dim = [], [], None
  with fileio.open_file(path, "rb") as f:
    for number, raw in enumerate(f, 1):
      if max_words and len(words) == max_words:
        break
      fields = raw.decode("utf-8", "replace").split()
      if not fields:
        continue
      if dim is None:
        dim = len(fields) - 1
      if len(fields) > dim + 1:
        continue
      try:
        if len(fields) < 2 or len(fields) != dim + 1:
          raise ValueError
        vectors.append(np.array(fields[1:], np.float32))
      except ValueError:
        raise fileio.InputError(f"--glove_file {path}, line {number}: expected a word and "
                                f"{dim or 'its'} numbers (as line 1)") from None
      words.append(fields[0])
  if not words:
    raise fileio.InputError(f"--glove_file {path!r} is empty")
  return words, np.stack(vectors)


class GloveNeighbours:
  """The `top_k` nearest words (cosine) of each word in a GloVe file, nearest first."""

  def __init__(self, words, vectors, top_k):
    self.words = words
    self.index = {}
    for i, word in enumerate(words):
      self.index.setdefault(word, i)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    self.unit = vectors / np.maximum(norms, 1e-12)  # [N, d]; a zero vector stays zero
    self.top_k = min(top_k, len(words) - 1)
    self._cache = {}

  def __call__(self, word):
    """The candidates of `word`: () for a word not in the file."""
    if word not in self._cache:
      i = self.index.get(word)
      found = ()
      if i is not None and self.top_k > 0:
        scores = self.unit @ self.unit[i]  # [N]
        scores[i] = -np.inf
        top = np.argpartition(-scores, self.top_k - 1)[:self.top_k]
        found = tuple(self.words[j] for j in top[np.argsort(-scores[top], kind="stable")])
      self._cache[word] = found
    return self._cache[word]


@dataclasses.dataclass
class _Text:
  """A text's words and each word's candidates (None or (): the word is kept)."""
  words: list
  candidates: list


class Augmenter:
  """Rewrites texts as the module docstring says.

  mlm: a `MaskedLM` (or anything with its `rank`); glove: a `GloveNeighbours`
  or None.
  """

  def __init__(self, tokenizer, mlm, *, max_seq_length, p_t, n_aug, seed, glove, batch_size):
    self.tokenizer = tokenizer
    self.mlm = mlm
    self.max_seq_length = max_seq_length
    self.p_t = p_t
    self.n_aug = n_aug
    self.seed = seed
    self.glove = glove
    self.batch_size = batch_size
    self.cls_id, self.sep_id, self.mask_id = tokenizer.convert_tokens_to_ids(
        ["[CLS]", "[SEP]", "[MASK]"])
    self.mlm_inputs = 0  # masked inputs run so far

  def augment_rows(self, rows, indices, text_columns):
    """Yields, for each row (a list of fields) and its index in the file, the row and its
    n_aug rewrites."""
    texts = self._candidates([row[c] for row in rows for c in text_columns])
    for i, (row, index) in enumerate(zip(rows, indices)):
      yield row
      yield from self._rewrite(row, index, text_columns,
                               texts[i * len(text_columns):(i + 1) * len(text_columns)])

  def _rewrite(self, row, index, text_columns, texts):
    """The n_aug rewrites of `row`, drawn with the generator of (seed, index)."""
    rng = np.random.default_rng([self.seed, index])
    rewrites = [list(row) for _ in range(self.n_aug)]
    for column, text in zip(text_columns, texts):
      if not text.words:
        continue  # nothing to rewrite (the text is only characters BERT drops)
      replace = rng.random((self.n_aug, len(text.words))) < self.p_t
      pick = rng.random((self.n_aug, len(text.words)))
      for rewrite, replace_row, pick_row in zip(rewrites, replace, pick):
        rewrite[column] = " ".join(
            candidates[int(p * len(candidates))] if r and candidates else word
            for word, candidates, r, p in zip(text.words, text.candidates, replace_row, pick_row))
    return rewrites

  def _candidates(self, texts):
    """The `_Text` of each text: single-piece words ranked by the masked LM, in batches."""
    analysed, queries, targets = [], [], []
    wordpiece = self.tokenizer.wordpiece_tokenizer
    for text in texts:
      words = self.tokenizer.basic_tokenizer.tokenize(text)
      pieces = [self.tokenizer.convert_tokens_to_ids(wordpiece.tokenize(w)) for w in words]
      flat = [i for word_pieces in pieces for i in word_pieces]
      candidates = [None] * len(words)
      start = 0
      for j, (word, word_pieces) in enumerate(zip(words, pieces)):
        if word.isalpha() and len(word_pieces) == 1:
          queries.append((flat, start))
          targets.append((len(analysed), j))
        elif word.isalpha() and self.glove is not None:
          candidates[j] = self.glove(word)
        start += len(word_pieces)
      analysed.append(_Text(words, candidates))
    for (t, j), ranked in zip(targets, self._rank(queries)):
      analysed[t].candidates[j] = ranked
    return analysed

  def _rank(self, queries):
    """The masked LM's candidates (words) for each query (a text's piece ids, the index of the
    piece to mask): the inputs sorted by length, run batch_size at a time."""
    inputs = [self._masked_input(flat, at) for flat, at in queries]
    order = sorted(range(len(inputs)), key=lambda q: len(inputs[q][0]))
    ranked = [None] * len(inputs)
    for b in range(0, len(order), self.batch_size):
      batch = order[b:b + self.batch_size]
      length = max(len(inputs[q][0]) for q in batch)
      input_ids = np.zeros([len(batch), length], np.int32)  # [B, S]
      input_mask = np.zeros([len(batch), length], np.int32)
      for r, q in enumerate(batch):
        input_ids[r, :len(inputs[q][0])] = inputs[q][0]
        input_mask[r, :len(inputs[q][0])] = 1
      positions = np.array([inputs[q][1] for q in batch], np.int32)
      originals = np.array([inputs[q][2] for q in batch], np.int32)
      top = self.mlm.rank(input_ids, input_mask, positions, originals)  # [B, top_k]
      for r, q in enumerate(batch):
        ranked[q] = tuple(self.tokenizer.convert_ids_to_tokens(top[r].tolist()))
    self.mlm_inputs += len(inputs)
    return ranked

  def _masked_input(self, flat, at):
    """(`[CLS] pieces [SEP]` ids with piece `at` masked, the [MASK]'s position, the piece):
    the max_seq_length window of the text centred on the piece."""
    budget = self.max_seq_length - 2
    start = min(max(at - budget // 2, 0), max(len(flat) - budget, 0))
    window = flat[start:start + budget]
    position = at - start
    ids = [self.cls_id] + window[:position] + [self.mask_id] + window[position + 1:] + [self.sep_id]
    return ids, position + 1, flat[at]


def output_path(options, train_path):
  """--output_file, default `train_aug` beside the training file (same extension), with
  `-<shard>-of-<num_shards>` when sharded."""
  path = options.output_file or os.path.join(
      os.path.dirname(train_path), AUG_TRAIN_SPLIT + os.path.splitext(train_path)[1])
  if options.num_shards > 1:
    path += f"-{options.shard_index:05d}-of-{options.num_shards:05d}"
  return path


def _row_writer(f, table):
  """Writes a row's fields to `f` as `table`'s file has them."""
  if table.quotechar is None:
    return lambda fields: f.write(table.delimiter.join(fields) + "\n")
  return csv.writer(f, delimiter=table.delimiter, quotechar=table.quotechar,
                    lineterminator="\n").writerow


def run(options):
  """Augments the task's training file as the options say; returns {output_file, rows (input
  rows of this shard), rows_written, mlm_inputs, seconds}.

  Raises cli.UserError subclasses for what the user can fix.
  """
  o = options
  processor = registry.get_processor(o.task_name, **o.task_options)
  table = processor.get_train_table(o.data_dir)
  path = output_path(o, table.path)
  fileio.check_outputs([path], o.overwrite, {
      "the training file of --data_dir": table.path, "--vocab_file": o.vocab_file,
      "--glove_file": o.glove_file})
  indices = range(o.shard_index, len(table.rows), o.num_shards)
  tokenization.validate_case_matches_checkpoint(o.do_lower_case, o.init_checkpoint)
  config = modeling.resolve_config(o.bert_config_file, o.init_checkpoint)
  config.check_seq_length(o.max_seq_length)
  tokenizer = tokenization.FullTokenizer(o.vocab_file, o.do_lower_case,
                                         tokenization.SPECIAL_TOKENS + (tokenization.MASK_TOKEN,))
  tokenizer.check_vocab_size(config.vocab_size, o.bert_config_file or o.init_checkpoint)
  try:
    output = fileio.AtomicFile(path, overwrite=o.overwrite)
  except OSError as e:
    raise fileio.OutputError(f"cannot create {path}: {e.strerror} (--output_file says where "
                             "to write)") from None
  try:
    mlm = MaskedLM(config, o.init_checkpoint, tokenizer.vocab, o.top_k)
    glove = (GloveNeighbours(*read_glove(o.glove_file, o.glove_max_words), o.top_k)
             if o.glove_file else None)
    augmenter = Augmenter(tokenizer, mlm, max_seq_length=o.max_seq_length, p_t=o.p_t,
                          n_aug=o.n_aug, seed=o.seed, glove=glove, batch_size=o.batch_size)
    logging.info("augmenting %d rows of %s into %s", len(indices), table.path, path)
    write = _row_writer(output.file, table)
    if table.header is not None:
      write(table.header)
    start = last_log = time.monotonic()
    written = 0
    chunk = 4 * o.batch_size  # rows whose masked inputs are sorted and batched together
    for c in range(0, len(indices), chunk):
      chunk_indices = indices[c:c + chunk]
      for row in augmenter.augment_rows([table.rows[i] for i in chunk_indices], chunk_indices,
                                        table.text_columns):
        write(row)
        written += 1
      done, now = c + len(chunk_indices), time.monotonic()
      if now - last_log >= PROGRESS_INTERVAL and done < len(indices):
        last_log = now
        rate = done / (now - start)
        logging.info("augmented %d / %d rows (%.1f rows/s, %.0f masked inputs/s, ETA %.0f s)",
                     done, len(indices), rate, augmenter.mlm_inputs / (now - start),
                     (len(indices) - done) / rate)
  except BaseException as e:
    name_output(e, path)
    output.abort()
    raise
  output.commit()
  seconds = time.monotonic() - start
  logging.info("wrote %s: %d rows, %d of them new, in %.1f s (%.1f input rows/s, %d masked "
               "inputs)", path, written, written - len(indices), seconds,
               len(indices) / max(seconds, 1e-9), augmenter.mlm_inputs)
  return {"output_file": path, "rows": len(indices), "rows_written": written,
          "mlm_inputs": augmenter.mlm_inputs, "seconds": seconds}
