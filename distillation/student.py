"""A student made of teacher layers: its embeddings, the chosen layers and pooler, copied.

TinyBERT and DistilBERT start students this way (e.g. teacher layers 1,3,5 of
6, 0-based); the copies need the teacher's width, heads and vocabulary.
"""

from cli import FlagError
from modeling.checkpoints import names as names_lib
from modeling.config import SHAPE_KEYS, ConfigError

FLAG = "--student_init_from_teacher_layers"


def check_teacher_layers(layers, teacher_config):
  """Raises FlagError unless `layers` are distinct 0-based indices of teacher layers."""
  teacher_layers = teacher_config.num_hidden_layers
  wrong = [i for i in layers if not 0 <= i < teacher_layers]
  if not layers or wrong:
    raise FlagError(f"{FLAG} must name teacher layers 0..{teacher_layers - 1}, got "
                    f"{','.join(str(i) for i in layers) or 'none'}")
  if len(set(layers)) != len(layers):
    raise FlagError(f"{FLAG} names a teacher layer twice: {','.join(str(i) for i in layers)}")


def student_config(teacher_config, layers, config=None):
  """The config of a student made of teacher `layers`.

  config: the student's own config (its dropouts and activation are kept), or
  None for the teacher's. Its weight shapes must be the teacher's, with
  len(layers) layers; ConfigError naming the keys that differ otherwise.
  """
  check_teacher_layers(layers, teacher_config)
  if config is None:
    return teacher_config.replace(num_hidden_layers=len(layers))
  if config.hidden_size != teacher_config.hidden_size:
    raise ConfigError(f"the student's hidden_size {config.hidden_size} differs from the "
                      f"teacher's {teacher_config.hidden_size}: a student made of teacher "
                      "layers needs the teacher's hidden size")
  differ = [f"{key} {getattr(config, key)} (teacher {getattr(teacher_config, key)})"
            for key in SHAPE_KEYS if key != "num_hidden_layers"
            and getattr(config, key) != getattr(teacher_config, key)]
  if config.num_hidden_layers != len(layers):
    differ.append(f"num_hidden_layers {config.num_hidden_layers} ({FLAG} names {len(layers)})")
  if differ:
    raise ConfigError("the student config does not fit the teacher layers it is made of: "
                      + "; ".join(differ))
  return config


def copy_teacher_layers(teacher, student, layers):
  """Assigns the teacher's embeddings and pooler to the student's, teacher layer layers[i]
  to student layer i. teacher, student: encoders (or models holding one, `bert`)."""
  source = names_lib.encoder_variables(names_lib.find_encoder(teacher))
  for name, variable in names_lib.encoder_variables(names_lib.find_encoder(student)).items():
    i = names_lib.layer_index(name)
    if i is not None:
      name = name.replace(f"/layer_{i}/", f"/layer_{layers[i]}/", 1)
    variable.assign(source[name])
