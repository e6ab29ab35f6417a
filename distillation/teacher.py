"""The teacher of task distillation: a model fine-tuned by run_classifier.py or run_squad.py.

`load_teacher` refuses weights without the task's output layer, `TeacherTask`
and `SquadTeacherTask` read the teacher's logits with the fine-tuning
script's records, and `check_better_than_chance` (dev accuracy) and
`check_spans_better_than_chance` (answer positions in SQuAD training windows)
refuse a teacher that does no better than a constant answer (an
un-fine-tuned teacher).
"""

import numpy as np

from classification.task import ClassifierTask
from cli import UserError
import modeling
from modeling.checkpoints import names
from squad.task import SquadTask

# A teacher whose dev accuracy is within this of always answering the most frequent
# label (or whose Pearson r is below it, for regression) is taken for un-fine-tuned.
CHANCE_MARGIN = 0.01


class TeacherError(UserError):
  """A teacher that cannot teach the task."""


# The fine-tuned model's output layer and the script that fine-tunes it, by model name.
_FINE_TUNED = {"bert_classifier": ("classifier output layer (output_weights, output_bias)",
                                   "run_classifier.py"),
               "bert_squad": ("SQuAD span layer (cls/squad/output_weights, output_bias)",
                              "run_squad.py")}


def load_teacher(model, path, kind="bert_classifier"):
  """Loads a fine-tuned model's weights into `model` (a classifier or, kind "bert_squad", a
  SQuAD model); TeacherError when the checkpoint lacks its output layer."""
  report = modeling.load_checkpoint(model, path)
  if [head for head in report.heads_absent if head != names.POOLER_LABEL]:
    layer, script = _FINE_TUNED[kind]
    raise TeacherError(f"--teacher_init_checkpoint {path} has no {layer}: it is not "
                       f"fine-tuned on the task. Fine-tune it with {script} and pass that "
                       "run's output_dir")
  return report


class TeacherTask(ClassifierTask):
  """The teacher as a classifier on the run's records: its dev logits."""

  def load_weights(self, model, path):
    return load_teacher(model, path).summary()


class SquadTeacherTask(SquadTask):
  """The teacher as a SQuAD model on the run's records: its start and end logits."""

  def load_weights(self, model, path):
    return load_teacher(model, path, "bert_squad").summary()


def check_better_than_chance(results, labels, is_regression, checkpoint):
  """TeacherError when the teacher's dev `results` are no better than a constant answer.

  labels: the dev labels (ids); checkpoint: the teacher's, for the message.
  """
  if is_regression:
    score, chance, what = results.get("eval_pearson", 0.0), CHANCE_MARGIN, "Pearson r"
  else:
    score, what = results["eval_accuracy"], "accuracy"
    chance = np.bincount(labels.astype(np.int64)).max() / len(labels) + CHANCE_MARGIN
  _check_score(score, chance, f"dev {what}", checkpoint, "run_classifier.py")


def check_spans_better_than_chance(logits, positions, checkpoint):
  """TeacherError when the teacher finds the answer's start and end in the SQuAD training
  windows that hold it no more often than a constant position does; returns (its accuracy,
  the constant's plus the margin), or None without such windows.

  logits: (start, end) float [n, S]; positions: (start, end) int [n], the answer's (0, the
  [CLS] token, where the window does not hold it: those windows are left out, as a teacher
  that learned only to answer [CLS] would pass on them); checkpoint: for the message.
  """
  holds = positions[0] > 0
  if not holds.any():
    return None
  logits = [l[holds] for l in logits]
  positions = [p[holds] for p in positions]
  score = np.mean([np.mean(l.argmax(-1) == p) for l, p in zip(logits, positions)])
  chance = np.mean([np.bincount(p.astype(np.int64)).max() / len(p) for p in positions])
  chance += CHANCE_MARGIN
  _check_score(score, chance, f"start and end accuracy on the {len(positions[0])} training "
               "windows that hold the answer", checkpoint, "run_squad.py")
  return score, chance


def _check_score(score, chance, what, checkpoint, script):
  if not score > chance:
    raise TeacherError(
        f"the teacher {checkpoint} looks un-fine-tuned: {what} {score:.4f}, no better than "
        f"{chance:.4f} (a constant answer). Fine-tune it with {script} first, or pass "
        "--nocheck_teacher to distill it anyway")
