"""Ours' training rate, read from a script's log (the runner's `step i/n: ...` lines)."""

import re
import statistics

_RATE = re.compile(r"step (\d+)/(\d+):.*examples_per_second = ([0-9.e+]+)")


def logged_rates(log):
  """[(step, num_train_steps, examples/s)] of every logged interval in the text `log`."""
  return [(int(m[1]), int(m[2]), float(m[3])) for m in _RATE.finditer(log)]


def steady_rate(rates):
  """Mean examples/s of the intervals after the first (which includes tracing); the first
  when it is the only one; None when none was logged."""
  steady = [r for _, _, r in rates[1:]] or [r for _, _, r in rates]
  return statistics.mean(steady) if steady else None
