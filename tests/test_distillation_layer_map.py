"""Layer maps (uniform, top, bottom, explicit), uneven depths included, and their errors."""

import pytest

from cli import FlagError, UserError
from distillation import layer_map
from distillation.layer_map import LayerMapError


@pytest.mark.parametrize("student, teacher, expected", [
    (3, 12, (3, 7, 11)),  # the paper's g(m) = 4m, 0-based
    (4, 12, (2, 5, 8, 11)),
    (4, 6, (0, 2, 3, 5)),  # g = 1.5, 3, 4.5, 6 rounded down
    (3, 6, (1, 3, 5)),
    (5, 7, (0, 1, 3, 4, 6)),
    (1, 5, (4,)),
    (6, 6, (0, 1, 2, 3, 4, 5)),
])
def test_uniform(student, teacher, expected):
  assert layer_map.layer_map("uniform", student, teacher) == expected


def test_uniform_pairs_the_last_layers_and_never_repeats_a_teacher_layer():
  for teacher in range(1, 25):
    for student in range(1, teacher + 1):
      mapped = layer_map.uniform(student, teacher)
      assert len(mapped) == student and mapped[-1] == teacher - 1
      assert all(a < b for a, b in zip(mapped, mapped[1:])) and mapped[0] >= 0


def test_top_bottom_and_explicit():
  assert layer_map.layer_map("top", 3, 7) == (4, 5, 6)
  assert layer_map.layer_map("bottom", 3, 7) == (0, 1, 2)
  assert layer_map.layer_map(" 1, 3,5 ", 3, 7) == (1, 3, 5)
  assert layer_map.layer_map("6,0", 2, 7) == (6, 0)  # any order


@pytest.mark.parametrize("spec", ["uniform", "top", "bottom"])
def test_a_student_deeper_than_its_teacher_is_refused(spec):
  with pytest.raises(LayerMapError, match=f"the {spec} layer map needs a student no deeper "
                     "than the teacher; the student has 4 layers, the teacher 3"):
    layer_map.layer_map(spec, 4, 3)


@pytest.mark.parametrize("spec, message", [
    ("1,3", "the layer map 1,3 names 2 teacher layers; the student has 3 layers"),
    ("1,3,6", r"the layer map 1,3,6 names teacher layer\(s\) 6; the teacher has layers 0..5"),
    ("-1,3,5", r"names teacher layer\(s\) -1;"),
    ("1,x,5", "--layer_map must be uniform, top, bottom or comma-separated 0-based layer "
              "indices such as 1,3,5, got '1,x,5'"),
    ("unifrom", "--layer_map must be uniform, top, bottom or"),
])
def test_explicit_map_errors(spec, message):
  with pytest.raises(FlagError, match=message) as error:
    layer_map.layer_map(spec, 3, 6)
  assert isinstance(error.value, UserError)
