"""What a trainer script adds to `cli.run`: the Ctrl-C and SIGTERM notes naming the checkpoint kept.

A trainer's flags are its options dataclass's fields (`cli.options`), the
runtime's (`training.runtime.RuntimeOptions`) among them;
`cli.run(main, interrupted_note=training.flags.interrupted_note,
terminated_note=training.flags.terminated_note)` says on Ctrl-C or SIGTERM (outside
the training loop, which saves and names its own) which checkpoint in --output_dir was kept.
"""

import signal

from absl import flags

from training import checkpointing


def interrupted_note():
  """`cli.run`'s Ctrl-C note for a trainer: the checkpoint in --output_dir a rerun resumes."""
  return checkpointing.interrupted_note(flags.FLAGS.output_dir)


def terminated_note():
  """`cli.run`'s SIGTERM note for a trainer (see `interrupted_note`)."""
  return checkpointing.interrupted_note(flags.FLAGS.output_dir, signal.SIGTERM)
