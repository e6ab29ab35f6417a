"""A student made of teacher layers: its config, the checks, and weights equal to the
teacher's where copied."""

import numpy as np
import pytest

from cli import FlagError
import modeling
from distillation import student as student_lib
from tests.tiny_models import TINY_BERT, bert_inputs

TEACHER = TINY_BERT.replace(num_hidden_layers=4)


def test_student_config_is_the_teachers_with_fewer_layers():
  assert student_lib.student_config(TEACHER, [1, 3]) == TINY_BERT.replace(num_hidden_layers=2)
  own = TINY_BERT.replace(hidden_dropout_prob=0.0, hidden_act="gelu_exact")
  assert student_lib.student_config(TEACHER, [0, 2], own) == own  # its dropout, activation kept


@pytest.mark.parametrize("changes, message", [
    (dict(hidden_size=64, num_attention_heads=4), "the student's hidden_size 64 differs from "
     "the teacher's 32: a student made of teacher layers needs the teacher's hidden size"),
    (dict(intermediate_size=40, vocab_size=100), "does not fit the teacher layers it is made "
     r"of: vocab_size 100 \(teacher 99\); intermediate_size 40 \(teacher 37\)"),
    (dict(num_hidden_layers=3), r"num_hidden_layers 3 \(--student_init_from_teacher_layers "
     "names 2\\)"),
])
def test_a_student_config_that_does_not_fit_is_refused(changes, message):
  with pytest.raises(modeling.ConfigError, match=message):
    student_lib.student_config(TEACHER, [1, 3], TINY_BERT.replace(**changes))


@pytest.mark.parametrize("layers, message", [
    ([1, 4], "--student_init_from_teacher_layers must name teacher layers 0..3, got 1,4"),
    ([], "must name teacher layers 0..3, got none"),
    ([-1], "got -1"),
    ([2, 2], "names a teacher layer twice: 2,2"),
])
def test_teacher_layers_are_checked(layers, message):
  with pytest.raises(FlagError, match=message):
    student_lib.student_config(TEACHER, layers)


def test_copied_weights_equal_the_teachers():
  teacher = modeling.build_encoder(TEACHER, name="teacher")
  student = modeling.build_encoder(student_lib.student_config(TEACHER, [3, 1]), name="student")
  for name in ("embeddings", "pooler"):
    assert not np.array_equal(student.get_layer(name).get_weights()[0],
                              teacher.get_layer(name).get_weights()[0])
  student_lib.copy_teacher_layers(teacher, student, [3, 1])
  for mine, theirs in [("embeddings", "embeddings"), ("pooler", "pooler"),
                       ("layer_0", "layer_3"), ("layer_1", "layer_1")]:
    ours, source = student.get_layer(mine).get_weights(), teacher.get_layer(theirs).get_weights()
    assert len(ours) == len(source) > 1
    for a, b in zip(ours, source):
      np.testing.assert_array_equal(a, b)
  # The copies are the student's own variables: training it leaves the teacher as it was.
  student.get_layer("layer_0").attention.query.kernel.assign_add(np.ones([32, 32], np.float32))
  assert not np.array_equal(student.get_layer("layer_0").attention.query.kernel.numpy(),
                            teacher.get_layer("layer_3").attention.query.kernel.numpy())


def test_a_student_of_all_teacher_layers_is_the_teacher():
  teacher = modeling.build_encoder(TEACHER, name="teacher")
  student = modeling.build_encoder(student_lib.student_config(TEACHER, [0, 1, 2, 3]))
  student_lib.copy_teacher_layers(teacher, student, [0, 1, 2, 3])
  features = bert_inputs()
  np.testing.assert_array_equal(student(features)["pooled_output"],
                                teacher(features)["pooled_output"])
