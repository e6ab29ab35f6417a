"""A script's options, declared once: each dataclass field is also its command-line flag.

A script's options are a dataclass whose fields are `option(default, help)`
(or `required(help)`): the field's name is the flag's name (Google's, where
Google's script has the flag), its default the flag's default, its type the
flag's kind (bool, int, float, str; `Optional[...]` of one of them), and
`choices` make it an enum. `define_flags(Options)` defines one absl flag per
such field (a field without a default is a required flag) as key flags of
the module that calls it, so that the script's `--help` lists them all;
`from_flags(Options)` builds the options from the parsed flags. A script
that chooses between options classes (task_distill.py: by task) defines
their flags with `define_union_flags` and builds the chosen one with
`from_flags`: a flag not given takes that class's default (its help says
it), and
`check_given_flags` refuses the flags of the others. A field
declared with plain `dataclasses.field` or a bare default is no flag (e.g. a
dict the library takes). `check_choices(options)` is the choice check for
options built in code.
"""

import dataclasses
import types
import typing

from absl import flags

from cli.errors import FlagError

# The flags defined here are the calling module's (absl attributes a flag to the first
# module on the stack that has not disclaimed), so `--help` lists them with the script's.
flags.disclaim_key_flags()

_SPEC = "cli.options"
_DEFINE = {bool: flags.DEFINE_bool, int: flags.DEFINE_integer, float: flags.DEFINE_float,
           str: flags.DEFINE_string}


@dataclasses.dataclass(frozen=True)
class _Spec:
  help: str
  choices: typing.Optional[tuple]
  short_name: typing.Optional[str]
  aliases: tuple


def option(default, help_text, *, choices=None, short_name=None, aliases=()):
  """A dataclass field that is also a flag: `default`, `help_text`, optionally an enum's
  `choices`, a one-letter `short_name` and other spellings (`aliases`)."""
  return dataclasses.field(default=default, metadata={
      _SPEC: _Spec(help_text, tuple(choices) if choices else None, short_name, tuple(aliases))})


def required(help_text, *, choices=None):
  """A dataclass field without default: a flag the script cannot run without."""
  return dataclasses.field(metadata={
      _SPEC: _Spec(help_text, tuple(choices) if choices else None, None, ())})


def option_fields(options_class):
  """The fields of `options_class` that are flags, in declaration order."""
  return [f for f in dataclasses.fields(options_class) if _SPEC in f.metadata]


def _flag_type(annotation):
  """bool, int, float or str from a field's type (`Optional[X]` is X)."""
  if typing.get_origin(annotation) in (typing.Union, types.UnionType):
    kinds = [a for a in typing.get_args(annotation) if a is not type(None)]
    if len(kinds) == 1:
      annotation = kinds[0]
  if annotation not in _DEFINE:
    raise TypeError(f"no flag kind for {annotation!r}")
  return annotation


def define_flags(options_class, flag_values=flags.FLAGS, *, skip=(), notes=None):
  """Defines one flag per option field of `options_class` (see the module), but `skip`'s;
  `notes` ({name: text}) are added to those flags' help."""
  hints = typing.get_type_hints(options_class)
  notes = notes or {}
  for field in option_fields(options_class):
    if field.name in skip:
      continue
    spec = field.metadata[_SPEC]
    help_text = " ".join(filter(None, (spec.help, notes.get(field.name))))
    is_required = field.default is dataclasses.MISSING
    default = None if is_required else field.default
    kwargs = dict(flag_values=flag_values, required=is_required)
    if spec.short_name:
      kwargs["short_name"] = spec.short_name
    if spec.choices:
      flags.DEFINE_enum(field.name, default, spec.choices, help_text, **kwargs)
    else:
      _DEFINE[_flag_type(hints[field.name])](field.name, default, help_text, **kwargs)
    for alias in spec.aliases:
      flags.DEFINE_alias(alias, field.name, flag_values=flag_values)


def define_union_flags(options_classes, flag_values=flags.FLAGS, *, when=None):
  """The flags of every class of `options_classes`; a field several declare is defined as the
  first declares it (its help and default), its help saying the other defaults: "Default
  with <when[class]>: <default>." for each class of `when` ({class: condition, e.g.
  "--task_name=squad"}) whose default differs."""
  first, notes = {}, {}
  for options_class in options_classes:
    for f in option_fields(options_class):
      if f.name not in first:
        first[f.name] = f
      elif options_class in (when or {}) and f.default != first[f.name].default:
        notes.setdefault(f.name, []).append(
            f"Default with {when[options_class]}: {f.default}.")
  defined = set()
  for options_class in options_classes:
    define_flags(options_class, flag_values, skip=defined,
                 notes={name: " ".join(text) for name, text in notes.items()})
    defined.update(f.name for f in option_fields(options_class))


def from_flags(options_class, flag_values=flags.FLAGS, **overrides):
  """An `options_class` from the parsed flags of its option fields, then `overrides`; a flag
  left at its default takes the field's (they differ where `define_union_flags` defined it
  for another class)."""
  values = {}
  for f in option_fields(options_class):
    if f.name in overrides:
      continue
    flag = flag_values[f.name]
    given = _given(flag)
    values[f.name] = flag.value if given or f.default is dataclasses.MISSING else f.default
  return options_class(**values, **overrides)


def _given(flag):
  """Whether the command line set `flag` (an alias sets its value, not its marker)."""
  return not flag.using_default_value or flag.value != flag.default


def check_given_flags(options_class, names, context, flag_values=flags.FLAGS):
  """FlagError for a flag of `names` given on the command line that `options_class` does
  not take; `context` says when (e.g. "with --task_name=squad")."""
  taken = {f.name for f in option_fields(options_class)}
  given = sorted(name for name in names
                 if name not in taken and _given(flag_values[name]))
  if given:
    raise FlagError(f"{', '.join('--' + name for name in given)} "
                    f"{'is' if len(given) == 1 else 'are'} not used {context}")


def check_choices(options):
  """FlagError naming the flag when an option with `choices` holds another value."""
  for field in option_fields(type(options)):
    choices = field.metadata[_SPEC].choices
    value = getattr(options, field.name)
    if choices and value not in choices:
      raise FlagError(f"--{field.name} must be one of {', '.join(choices)}, got {value!r}")
