"""What every command-line script shares: the user-error family and the `main` wrapper.

A script's `main` raises a `UserError` (or a subclass: `fileio.InputError`,
`modeling.ConfigError`, ...) for anything the user can fix; `cli.run` turns it
into one line `<script>: error: <message>` and exit status 1, as it does a flag
absl cannot parse and a full disk. Ctrl-C becomes
`<script>: interrupted` and exit status 130, also while the script is still importing.
Any other exception is a bug and keeps its traceback.
"""

import os
import signal
import sys


def _interrupted_while_starting(signum, frame):
  del signum, frame
  name = os.path.splitext(os.path.basename(sys.argv[0]))[0]
  sys.stderr.write(f"{name}: interrupted\n")
  os._exit(130)  # pylint: disable=protected-access  (nothing to clean up yet)


# A script imports `cli` first, so that Ctrl-C during its imports (TensorFlow's take
# seconds) is `<script>: interrupted` and exit 130 too; `run` hands Ctrl-C back to Python.
# Only for our scripts (the repository's top folder), not for programs importing the packages.
_main = getattr(sys.modules.get("__main__"), "__file__", None) or ""
if os.path.dirname(os.path.abspath(_main)) == os.path.dirname(os.path.dirname(__file__)):
  signal.signal(signal.SIGINT, _interrupted_while_starting)

from cli.errors import FlagError, UserError  # pylint: disable=wrong-import-position
from cli.app import run  # pylint: disable=wrong-import-position

__all__ = ["FlagError", "UserError", "run"]
