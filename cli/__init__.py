"""What every command-line script shares: the user-error family and the `main` wrapper.

A script's `main` raises a `UserError` (or a subclass: `fileio.InputError`,
`modeling.ConfigError`, ...) for anything the user can fix; `cli.run` turns it
into one line `<script>: error: <message>` and exit status 1, as it does a flag
absl cannot parse and a full disk. Ctrl-C becomes
`<script>: interrupted` and exit status 130. Any other exception is a bug and
keeps its traceback.
"""

from cli.errors import FlagError, UserError
from cli.app import run

__all__ = ["FlagError", "UserError", "run"]
