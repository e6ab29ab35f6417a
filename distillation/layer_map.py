"""Which teacher layer each student layer learns from (TinyBERT's mapping function g).

A map is a tuple of M 0-based teacher layer indices, one per student layer
(the embeddings always map to the embeddings). The paper counts from 1 with 0
for the embeddings: its g(m) is our map[m - 1] + 1.
"""

from cli import FlagError

INDICES = "comma-separated 0-based layer indices such as 1,3,5"


class LayerMapError(FlagError):
  """A layer map that does not fit the two models' depths."""


def uniform(student_layers, teacher_layers):
  """The paper's g(m) = m * N / M, rounded down when M does not divide N.

  Rounding down keeps g(M) = N (the last layers pair up) and the map strictly
  increasing, as M <= N; e.g. M=4, N=6 gives g = 1, 3, 4, 6.
  """
  _check_depths(student_layers, teacher_layers, "uniform")
  return tuple(m * teacher_layers // student_layers - 1 for m in range(1, student_layers + 1))


def top(student_layers, teacher_layers):
  """The teacher's last M layers."""
  _check_depths(student_layers, teacher_layers, "top")
  return tuple(range(teacher_layers - student_layers, teacher_layers))


def bottom(student_layers, teacher_layers):
  """The teacher's first M layers."""
  _check_depths(student_layers, teacher_layers, "bottom")
  return tuple(range(student_layers))


def explicit(indices, student_layers, teacher_layers):
  """A given list: one teacher layer index (0-based) per student layer."""
  indices = tuple(indices)
  if len(indices) != student_layers:
    raise LayerMapError(f"the layer map {_text(indices)} names {len(indices)} teacher layers; "
                        f"the student has {student_layers} layers")
  wrong = [i for i in indices if not 0 <= i < teacher_layers]
  if wrong:
    raise LayerMapError(f"the layer map {_text(indices)} names teacher layer(s) {_text(wrong)}; "
                        f"the teacher has layers 0..{teacher_layers - 1}")
  return indices


STRATEGIES = {"uniform": uniform, "top": top, "bottom": bottom}


def layer_map(spec, student_layers, teacher_layers):
  """The map `spec` (--layer_map) names: "uniform", "top", "bottom" or a list such as "1,3,5"."""
  spec = spec.strip()
  if spec in STRATEGIES:
    return STRATEGIES[spec](student_layers, teacher_layers)
  indices = parse_indices(spec, "--layer_map", f"uniform, top, bottom or {INDICES}")
  return explicit(indices, student_layers, teacher_layers)


def parse_indices(text, flag, expected=INDICES):
  """[int] from "1,3,5"; a FlagError saying that `flag` must be `expected` otherwise."""
  try:
    return [int(part) for part in text.split(",")]
  except ValueError:
    raise FlagError(f"{flag} must be {expected}, got {text!r}") from None


def _check_depths(student_layers, teacher_layers, name):
  if student_layers > teacher_layers:
    raise LayerMapError(f"the {name} layer map needs a student no deeper than the teacher; "
                        f"the student has {student_layers} layers, the teacher {teacher_layers}")


def _text(indices):
  return ",".join(str(i) for i in indices)
