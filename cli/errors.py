"""The base of every error a user can fix; its message is shown as one line."""


class UserError(Exception):
  """Input, flags or files that cannot be used as given; the message says which and why."""


class FlagError(UserError, ValueError):
  """A flag value (or combination of flags) that cannot work; the message names the flag."""
