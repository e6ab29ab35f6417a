"""Options declared once (`cli.options`): every script's flags come from its options dataclass,
and `--help` still lists Google's flags with Google's defaults and nothing of TensorFlow's."""

import dataclasses
import json
import os
import re
import subprocess
import sys
from typing import Optional

from absl import flags
import pytest

import cli
from cli import options
from cli.options import option, required
from tests.paths import REPO

ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(REPO))

# Google's flags and defaults (google-research/bert), script by script: a name or default that
# drifts from these breaks the command lines written for Google's release.
GOOGLE_TPU = dict(use_tpu=False, tpu_name=None, tpu_zone=None, gcp_project=None, master=None,
                  num_tpu_cores=8)
GOOGLE = {
    "run_classifier.py": dict(
        data_dir=None, bert_config_file=None, task_name=None, vocab_file=None, output_dir=None,
        init_checkpoint=None, do_lower_case=True, max_seq_length=128, do_train=False,
        do_eval=False, do_predict=False, train_batch_size=32, eval_batch_size=8,
        predict_batch_size=8, learning_rate=5e-5, num_train_epochs=3.0, warmup_proportion=0.1,
        save_checkpoints_steps=1000, iterations_per_loop=1000, **GOOGLE_TPU),
    "run_squad.py": dict(
        bert_config_file=None, vocab_file=None, output_dir=None, train_file=None,
        predict_file=None, init_checkpoint=None, do_lower_case=True, max_seq_length=384,
        doc_stride=128, max_query_length=64, do_train=False, do_predict=False,
        train_batch_size=32, predict_batch_size=8, learning_rate=5e-5, num_train_epochs=3.0,
        warmup_proportion=0.1, save_checkpoints_steps=1000, iterations_per_loop=1000,
        n_best_size=20, max_answer_length=30, verbose_logging=False,
        version_2_with_negative=False, null_score_diff_threshold=0.0, **GOOGLE_TPU),
    "run_pretraining.py": dict(
        bert_config_file=None, input_file=None, output_dir=None, init_checkpoint=None,
        max_seq_length=128, max_predictions_per_seq=20, do_train=False, do_eval=False,
        train_batch_size=32, eval_batch_size=8, learning_rate=5e-5, num_train_steps=100000,
        num_warmup_steps=10000, save_checkpoints_steps=1000, iterations_per_loop=1000,
        max_eval_steps=100, **GOOGLE_TPU),
    "extract_features.py": dict(
        input_file=None, output_file=None, layers="-1,-2,-3,-4", bert_config_file=None,
        max_seq_length=128, init_checkpoint=None, vocab_file=None, do_lower_case=True,
        batch_size=32, use_tpu=False, master=None, num_tpu_cores=8,
        use_one_hot_embeddings=False),
    "create_pretraining_data.py": dict(
        input_file=None, output_file=None, vocab_file=None, do_lower_case=True,
        do_whole_word_mask=False, max_seq_length=128, max_predictions_per_seq=20,
        random_seed=12345, dupe_factor=10, masked_lm_prob=0.15, short_seq_prob=0.1),
}
# Ours: every trainer's runtime flags, and each script's own (names and defaults as released).
RUNTIME = dict(distribution_strategy="one_device", dtype="float32", use_xla=False,
               optimizer="adamw", gradient_accumulation_steps=1, keep_checkpoint_max=5,
               log_steps=100, seed=None, num_gpus=None, **GOOGLE_TPU)
TASK_DATA = dict(task_name=None, data_dir=None, vocab_file=None, do_lower_case=True,
                 max_seq_length=128, text_a_column=None, text_b_column=None, label_column=None,
                 header=True, delimiter=None, regression=False, skip_bad_rows=False,
                 language=None)
DISTILL = dict(teacher_init_checkpoint=None, teacher_bert_config_file=None,
               student_bert_config_file=None, student_init_checkpoint=None,
               student_init_from_teacher_layers=None, layer_map="uniform",
               projection="per_layer", embedding_loss_weight=1.0, hidden_loss_weight=1.0,
               attention_loss_weight=1.0, attention_kl_loss_weight=0.0)
OURS = {
    "run_classifier.py": dict(export_dir=None, overwrite_export=False, export_xla=False,
                              aug_train=False,
                              **TASK_DATA, **RUNTIME),
    "run_squad.py": dict(tune_null_threshold=False, export_dir=None, overwrite_export=False,
                         **RUNTIME),
    "run_pretraining.py": dict(vocab_file=None, masked_lm_prob=0.15, do_whole_word_mask=False,
                               **RUNTIME),
    "extract_features.py": dict(overwrite=False),
    "create_pretraining_data.py": {},
    "general_distill.py": dict(
        input_file=None, output_dir=None, max_seq_length=128, max_predictions_per_seq=20,
        restore_masked_tokens=True, train_batch_size=32, learning_rate=5e-5,
        num_train_steps=100000, num_warmup_steps=10000, **DISTILL, **RUNTIME),
    "task_distill.py": dict(
        stage="both", intermediate_epochs=10.0, prediction_epochs=3.0, temperature=1.0,
        check_teacher=True, output_dir=None, do_train=False, do_eval=False, do_predict=False,
        train_batch_size=32, eval_batch_size=8, predict_batch_size=8, learning_rate=5e-5,
        warmup_proportion=0.1, export_dir=None, overwrite_export=False, export_xla=False,
        aug_train=False,
        # --task_name=squad: run_squad's (max_seq_length shows the classification default)
        train_file=None, predict_file=None, doc_stride=128, max_query_length=64,
        n_best_size=20, max_answer_length=30, verbose_logging=False,
        version_2_with_negative=False, null_score_diff_threshold=0.0,
        tune_null_threshold=False, **TASK_DATA, **DISTILL, **RUNTIME),
    "augment_data.py": dict(
        init_checkpoint=None, output_file=None, overwrite=False, bert_config_file=None, p_t=0.4,
        n_aug=20, top_k=15, glove_file=None, glove_max_words=100000, seed=12345, batch_size=64,
        num_shards=1, shard_index=0, **TASK_DATA),
    "export_tfhub.py": dict(  # TF Model Garden's export_tfhub.py names
        bert_config_file=None, model_checkpoint_path=None, export_path=None, export_type="model",
        vocab_file=None, do_lower_case=None, default_seq_length=128, overwrite_export=False),
    "build_vocab.py": dict(input_file=None, output_file=None, vocab_size=3000,
                           do_lower_case=True, min_frequency=2, overwrite=False),
    "evaluate_squad.py": dict(na_prob_file=None, na_prob_thresh=1.0, out_file=None,
                              overwrite=False, version="auto"),
}
# Flags a script cannot run without (Google's, but bert_config_file: ours reads the config
# stored with the checkpoint).
REQUIRED = {
    "run_classifier.py": {"data_dir", "task_name", "vocab_file", "output_dir"},
    "run_squad.py": {"vocab_file", "output_dir"},
    "run_pretraining.py": {"input_file", "output_dir"},
    "extract_features.py": {"input_file", "output_file", "init_checkpoint", "vocab_file"},
    "create_pretraining_data.py": {"input_file", "output_file", "vocab_file"},
    "general_distill.py": {"input_file", "teacher_init_checkpoint", "output_dir"},
    "task_distill.py": {"task_name", "vocab_file", "output_dir", "teacher_init_checkpoint"},
    "augment_data.py": {"task_name", "data_dir", "init_checkpoint", "vocab_file"},
    "export_tfhub.py": {"export_path", "vocab_file"},
    "build_vocab.py": {"input_file", "output_file"},
    "evaluate_squad.py": set(),
}
# Not a script's flags: task_distill's student comes from its --student_* flags.
ABSENT = {"task_distill.py": ("bert_config_file", "init_checkpoint", "num_train_epochs")}


def parse_help(text):
  """{flag name: its `(default: ...)` text, or None when --help shows no default}."""
  found = {}
  for block in re.split(r"\n(?=  (?:-\w,)?--)", text):
    match = re.match(r"  (?:-\w,)?--(?:\[no\])?([\w-]+):", block)
    if match:
      default = re.search(r"\(default: '(.*?)'\)", block, re.S)
      found[match.group(1)] = default.group(1) if default else None
  return found


def shown(value):
  """How absl's --help shows a default."""
  if value is None:
    return None
  return str(value).lower() if isinstance(value, bool) else str(value)


# Runs each script as `script --help`, then parses no flags at all (the error names the
# required ones), in one process: TensorFlow is imported once. Between scripts, the flags a
# script defined are deleted.
HELP_THEN_NO_FLAGS = """
import contextlib, io, json, runpy, sys
import cli
import tensorflow
from absl import app, flags
app.define_help_flags()
before = set(flags.FLAGS)
found = {}
for script in sys.argv[1:]:
  sys.argv = [script, "--help"]
  with contextlib.redirect_stdout(io.StringIO()) as help_text:
    try:
      runpy.run_path(script, run_name="__main__")
    except SystemExit:
      pass
  flags.FLAGS.unparse_flags()
  try:
    flags.FLAGS([script])
    error = ""
  except flags.Error as e:
    error = str(e)
  found[script] = {"help": help_text.getvalue(), "error": error}
  for name in set(flags.FLAGS) - before:
    delattr(flags.FLAGS, name)
print(json.dumps(found))
"""


@pytest.fixture(name="helps", scope="module")
def fixture_helps():
  """{script: {"help": its --help, "error": the error without flags}}."""
  paths = [os.path.join(REPO, script) for script in sorted(OURS)]
  out = subprocess.run([sys.executable, "-c", HELP_THEN_NO_FLAGS, *paths], capture_output=True,
                       text=True, env=ENV, check=False)
  assert out.returncode == 0, out.stderr[-3000:]
  found = json.loads(out.stdout.splitlines()[-1])
  return {os.path.basename(path): value for path, value in found.items()}


@pytest.mark.multiprocess
@pytest.mark.parametrize("script", sorted(OURS))
def test_help_lists_google_flags_with_google_defaults(helps, script):
  listed = parse_help(helps[script]["help"])
  expected = dict(OURS[script], **GOOGLE.get(script, {}))
  assert {name: listed.get(name, "<not listed>") for name in expected} == {
      name: shown(value) for name, value in expected.items()}
  for name in ABSENT.get(script, ()):
    assert name not in listed
  # Only the script's flags, not TensorFlow's ~130 internal ones (those are in --helpfull).
  assert "tt_check_filter" not in listed and "alsologtostderr" not in listed
  assert set(re.findall(r"Flag --(\w+) must have a value other than None",
                        helps[script]["error"])) == REQUIRED[script]


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Demo:
  name: str = required("A required string.")
  count: int = option(3, "An integer.")
  rate: Optional[float] = option(None, "A float or nothing.")
  on: bool = option(True, "A bool.")
  kind: str = option("a", "An enum.", choices=("a", "b"), short_name="k", aliases=("the-kind",))
  extra: dict = dataclasses.field(default_factory=dict)  # not a flag


def test_options_are_built_from_the_flags_their_fields_define():
  flag_values = flags.FlagValues()
  options.define_flags(_Demo, flag_values)
  assert "extra" not in flag_values
  flag_values(["prog", "--name=x", "--count=5", "--rate=0.5", "--noon", "--the-kind=b"])
  assert options.from_flags(_Demo, flag_values, extra={"y": 1}) == _Demo(
      name="x", count=5, rate=0.5, on=False, kind="b", extra={"y": 1})
  assert (flag_values["count"].help, flag_values["k"].name) == ("An integer.", "kind")
  flag_values.unparse_flags()
  with pytest.raises(flags.IllegalFlagValueError, match="--name must have a value"):
    flag_values(["prog"])
  with pytest.raises(flags.IllegalFlagValueError, match="value should be one of <a|b>"):
    flag_values(["prog", "--name=x", "--kind=c"])


def test_check_choices_names_the_flag():
  options.check_choices(_Demo(name="x", kind="b"))
  with pytest.raises(cli.FlagError, match="--kind must be one of a, b, got 'c'"):
    options.check_choices(_Demo(name="x", kind="c"))


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Other:
  count: int = option(7, "Another integer.")
  rate: Optional[float] = option(None, "Another float.")
  size: int = option(2, "A size.")


def test_union_flags_take_the_first_declaration_and_say_the_other_defaults():
  flag_values = flags.FlagValues()
  options.define_union_flags((_Demo, _Other), flag_values, when={_Other: "--other"})
  assert flag_values["count"].help == "An integer. Default with --other: 7."
  assert (flag_values["count"].default, flag_values["rate"].help) == (3, "A float or nothing.")
  assert flag_values["size"].help == "A size."
  flag_values(["prog", "--name=x"])
  assert options.from_flags(_Other, flag_values) == _Other()


@pytest.mark.multiprocess
def test_task_distill_help_says_the_squad_default_of_max_seq_length(helps):
  listed = parse_help(helps["task_distill.py"]["help"])
  assert listed["max_seq_length"] == shown(128)
  text = " ".join(helps["task_distill.py"]["help"].split())  # absl wraps the help
  assert re.search(r"--max_seq_length: [^-]*\. Default with --task_name=squad: 384\. "
                   r"\(default: '128'\)", text), text
