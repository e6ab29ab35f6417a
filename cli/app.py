"""`run(main)`: absl's app.run with Google's flags, user errors as one line, Ctrl-C as exit 130."""

import os
import sys

from absl import app

from cli.errors import UserError


def _script_name():
  return os.path.splitext(os.path.basename(sys.argv[0]))[0]


def run(main, interrupted_note=None):
  """Runs `main(argv)` under absl and exits with its status.

  `main` returns None or an exit status. A `UserError` prints
  `<script>: error: <message>` and exits 1;
  KeyboardInterrupt prints `<script>: interrupted` plus `interrupted_note()`
  (e.g. which checkpoint was kept), if given, and exits 130.
  """
  def wrapped(argv):
    name = _script_name()
    try:
      status = main(argv)
    except UserError as e:
      print(f"{name}: error: {e}", file=sys.stderr)
      sys.exit(1)
    except KeyboardInterrupt:
      note = interrupted_note() if interrupted_note else None
      print(f"{name}: interrupted" + (f"; {note}" if note else ""), file=sys.stderr)
      sys.exit(130)
    sys.exit(status or 0)
  app.run(wrapped)
