"""Paired bootstrap interval shared by the quality benches."""

import numpy as np


def paired_interval(differences, samples, seed):
  """95% percentile interval of mean(differences), the pairs resampled `samples` times.

  `differences` holds one (ours - other) value per pair: a dev example scored by
  two models, or a seed whose two runs share their start.
  """
  differences = np.asarray(differences, dtype=np.float64)
  draws = np.random.default_rng(seed).integers(0, len(differences),
                                               (samples, len(differences)))
  means = differences[draws].mean(axis=1)
  return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))
