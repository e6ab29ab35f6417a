"""The teacher of task distillation: a model fine-tuned by run_classifier.py or run_squad.py.

`load_teacher` refuses weights without the task's output layer, `TeacherTask`
reads the teacher's dev logits with run_classifier's records, and
`check_better_than_chance` refuses a teacher that does no better on dev than
a constant answer (an un-fine-tuned teacher).
"""

import numpy as np

from classification.task import ClassifierTask
from cli import UserError
import modeling
from modeling.checkpoints import names

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


def check_better_than_chance(results, labels, is_regression, checkpoint):
  """TeacherError when the teacher's dev `results` are no better than a constant answer.

  labels: the dev labels (ids); checkpoint: the teacher's, for the message.
  """
  if is_regression:
    score, chance, what = results.get("eval_pearson", 0.0), CHANCE_MARGIN, "Pearson r"
  else:
    score, what = results["eval_accuracy"], "accuracy"
    chance = np.bincount(labels.astype(np.int64)).max() / len(labels) + CHANCE_MARGIN
  if not score > chance:
    raise TeacherError(
        f"the teacher {checkpoint} looks un-fine-tuned: dev {what} {score:.4f}, no better than "
        f"{chance:.4f} (a constant answer). Fine-tune it with run_classifier.py first, or pass "
        "--nocheck_teacher to distill it anyway")
