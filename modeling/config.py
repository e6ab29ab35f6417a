"""`BertConfig`: the 11 hyper-parameters of Google's `bert_config.json`, validated.

Reading a file is stricter than Google's `BertConfig.from_json_file`, which
takes a misspelt key's default silently: an unknown key is an error (naming
the closest known one), and so is a missing key that fixes a weight's shape.
The keys some published Google configs carry for nothing this model has
(`IGNORED_KEYS`) are ignored with a warning; a missing `hidden_act`, dropout
or `initializer_range` takes Google's default with a warning.
"""

import dataclasses
import difflib
import json

from absl import logging
import tensorflow as tf

from cli import UserError

from modeling import activations


class ConfigError(UserError, ValueError):
  """A BERT config that cannot describe a valid model."""


# Published sizes (Turc et al. 2019 for the small ones): name -> (layers, hidden).
PRESETS = {
    "tiny": (2, 128),
    "mini": (4, 256),
    "small": (4, 512),
    "medium": (8, 512),
    "base": (12, 768),
    "large": (24, 1024),
}


# In the multilingual and Chinese models' configs; they describe no weight.
IGNORED_KEYS = ("directionality", "pooler_fc_size", "pooler_num_attention_heads",
                "pooler_num_fc_layers", "pooler_size_per_head", "pooler_type")
# The keys that fix the shapes of the weights: a config file must give them.
SHAPE_KEYS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
              "intermediate_size", "max_position_embeddings", "type_vocab_size")


@dataclasses.dataclass(frozen=True)
class BertConfig:
  """Hyper-parameters of a BERT encoder, with Google's names and defaults.

  `hidden_act` follows Google's convention: "gelu" is the tanh approximation.
  "gelu_exact" (erf) and "gelu_tanh" name each variant explicitly.
  """
  vocab_size: int
  hidden_size: int = 768
  num_hidden_layers: int = 12
  num_attention_heads: int = 12
  intermediate_size: int = 3072
  hidden_act: str = "gelu"
  hidden_dropout_prob: float = 0.1
  attention_probs_dropout_prob: float = 0.1
  max_position_embeddings: int = 512
  type_vocab_size: int = 16
  initializer_range: float = 0.02
  # The file the config was read from, for messages (None: built in code); not a field, so
  # it is neither compared nor written.
  source = None

  def __post_init__(self):
    self.validate()

  def validate(self, source="BertConfig"):
    """Raises ConfigError naming `source` and every invalid field."""
    problems = []
    for name in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                 "intermediate_size", "max_position_embeddings", "type_vocab_size"):
      value = getattr(self, name)
      if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        problems.append(f"{name} must be a positive integer, got {value!r}")
    for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
      value = getattr(self, name)
      if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        problems.append(f"{name} must be a number in [0, 1), got {value!r}")
    value = self.initializer_range
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
      problems.append(f"initializer_range must be a positive number, got {value!r}")
    if not isinstance(self.hidden_act, str) or self.hidden_act not in activations.NAMES:
      problems.append(f"hidden_act must be one of {sorted(activations.NAMES)}, "
                      f"got {self.hidden_act!r}")
    if (not problems and self.hidden_size % self.num_attention_heads):
      problems.append(f"hidden_size ({self.hidden_size}) is not a multiple of "
                      f"num_attention_heads ({self.num_attention_heads})")
    if problems:
      raise ConfigError(f"{source}: " + "; ".join(problems))

  def check_seq_length(self, max_seq_length):
    """Raises ConfigError (Google's message, naming the flag and the config's file) when
    max_seq_length exceeds the position table."""
    if max_seq_length > self.max_position_embeddings:
      where = f" in {self.source}" if self.source else ""
      raise ConfigError(f"Cannot use sequence length {max_seq_length} because the BERT model "
                        f"was only trained up to sequence length "
                        f"{self.max_position_embeddings} (--max_seq_length={max_seq_length}; "
                        f"max_position_embeddings{where})")

  @property
  def head_size(self):
    return self.hidden_size // self.num_attention_heads

  @classmethod
  def preset(cls, name, vocab_size=30522, **overrides):
    """A published size: heads = hidden/64, intermediate = 4*hidden, type_vocab_size 2."""
    if name not in PRESETS:
      raise ConfigError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}")
    layers, hidden = PRESETS[name]
    values = dict(vocab_size=vocab_size, hidden_size=hidden, num_hidden_layers=layers,
                  num_attention_heads=hidden // 64, intermediate_size=4 * hidden,
                  type_vocab_size=2)
    values.update(overrides)
    return cls(**values)

  @classmethod
  def from_dict(cls, values, source=None):
    """Builds a config from a dict with Google's keys (see the module doc for the rules).

    source: the file it was read from (kept as `.source`), named by errors.
    """
    name = source or "config"
    if not isinstance(values, dict):
      raise ConfigError(f"{name}: expected a JSON object, got {type(values).__name__}")
    fields = [f.name for f in dataclasses.fields(cls)]
    problems = []
    for key in values:
      if key not in fields and key not in IGNORED_KEYS:
        close = difflib.get_close_matches(key, fields, n=1)
        problems.append(f"unknown key {key!r}" +
                        (f" (did you mean {close[0]!r}?)" if close else ""))
    missing = [key for key in SHAPE_KEYS if key not in values]
    if missing:
      problems.append("missing required key" + ("s " if len(missing) > 1 else " ") +
                      ", ".join(repr(key) for key in missing))
    if problems:
      raise ConfigError(f"{name}: " + "; ".join(problems))
    ignored = [key for key in values if key in IGNORED_KEYS]
    defaulted = [key for key in fields if key not in values]
    if ignored or defaulted:
      logging.warning("%s: %s", name, "; ".join(
          ([f"ignored {', '.join(ignored)} (no such weights here)"] if ignored else []) +
          ([f"Google's defaults for {', '.join(defaulted)}"] if defaulted else [])))
    kwargs = {k: v for k, v in values.items() if k in fields}
    config = object.__new__(cls)  # Skips __post_init__: the error below names `source`.
    for f in dataclasses.fields(cls):
      object.__setattr__(config, f.name, kwargs.get(f.name, f.default))
    config.validate(name)
    object.__setattr__(config, "source", source)
    return config

  @classmethod
  def from_json_file(cls, path):
    """Reads Google's `bert_config.json`; errors name the file."""
    try:
      with tf.io.gfile.GFile(path, "rb") as f:
        data = f.read()
    except tf.errors.OpError as e:
      raise ConfigError(f"cannot read BERT config {path!r}: {e.message}") from None
    try:
      values = json.loads(data)
    except UnicodeDecodeError as e:
      raise ConfigError(f"{path}: not UTF-8 text (byte {e.start})") from None
    except json.JSONDecodeError as e:
      raise ConfigError(f"{path}: not valid JSON (line {e.lineno}, column {e.colno}: "
                        f"{e.msg})") from None
    return cls.from_dict(values, source=str(path))

  def to_dict(self):
    return dataclasses.asdict(self)

  def to_json_string(self):
    return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

  def replace(self, **changes):
    return dataclasses.replace(self, **changes)
