"""What every command-line script shares: the user-error family and the `main` wrapper.

A script's options are declared once, as dataclass fields that are also its
absl flags (`cli.options`).

A script's `main` raises a `UserError` (or a subclass: `fileio.InputError`,
`modeling.ConfigError`, ...) for anything the user can fix; `cli.run` turns it
into one line `<script>: error: <message>` and exit status 1, as it does a flag
absl cannot parse and a full disk. Ctrl-C becomes
`<script>: interrupted` and exit status 130, SIGTERM `<script>: terminated` and 143, also
while the script is still importing. A script with nothing to save ends at once, its
temporaries deleted; a trainer first saves a checkpoint (`cli.Stopped`) but in its export
(`cli.exit_on_signal`).
Any other exception is a bug and keeps its traceback.

Importing `cli` also turns on TensorFlow's oneDNN CPU kernels (see `ONEDNN_ENV`).
"""

import os
import signal
import sys

# TensorFlow runs its oneDNN CPU kernels by default only on CPUs with AVX-512 VNNI/BF16 or
# AMX. On others (AVX2) it falls back to Eigen kernels: slower batch matmuls (the attention
# core) and no matmul + bias + GELU fusion. Our scripts turn them on everywhere; a user's own
# TF_ENABLE_ONEDNN_OPTS=0 still turns them off. Read by TensorFlow when it is imported, so
# set before any script imports it.
ONEDNN_ENV = "TF_ENABLE_ONEDNN_OPTS"
os.environ.setdefault(ONEDNN_ENV, "1")


def _stopped_while_starting(signum, frame):
  del frame
  name = os.path.splitext(os.path.basename(sys.argv[0]))[0]
  sys.stderr.write(f"{name}: {'terminated' if signum == signal.SIGTERM else 'interrupted'}\n")
  os._exit(128 + signum)  # pylint: disable=protected-access  (nothing to clean up yet)


# A script imports `cli` first, so that Ctrl-C (or SIGTERM) during its imports (TensorFlow's
# take seconds) is `<script>: interrupted` and exit 130 (`terminated`, 143) too; `run` hands
# them back to Python. Only for our scripts (the repository's top folder), not for programs
# importing the packages.
_main = getattr(sys.modules.get("__main__"), "__file__", None) or ""
if os.path.dirname(os.path.abspath(_main)) == os.path.dirname(os.path.dirname(__file__)):
  signal.signal(signal.SIGINT, _stopped_while_starting)
  signal.signal(signal.SIGTERM, _stopped_while_starting)

from cli.errors import FlagError, UserError  # pylint: disable=wrong-import-position
from cli.app import Stopped, exit_on_signal, run  # pylint: disable=wrong-import-position

__all__ = ["FlagError", "ONEDNN_ENV", "Stopped", "UserError", "exit_on_signal", "run"]
