"""What a trainer script adds to `cli.run`: the Ctrl-C note naming the checkpoint kept.

A trainer's flags are its options dataclass's fields (`cli.options`), the
runtime's (`training.runtime.RuntimeOptions`) among them;
`cli.run(main, interrupted_note=training.flags.interrupted_note)` says on
Ctrl-C which checkpoint in --output_dir was kept.
"""

from absl import flags

from training import checkpointing


def interrupted_note():
  """`cli.run`'s Ctrl-C note for a trainer: the checkpoint in --output_dir a rerun resumes."""
  return checkpointing.interrupted_note(flags.FLAGS.output_dir)
