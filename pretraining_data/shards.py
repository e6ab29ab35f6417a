"""The record-to-shard rule of `--num_output_shards`, shared by the local tool and the Beam pipeline.

Record i of (chunk, dupe) gets a 63-bit key drawn from a generator seeded by
(random_seed, chunk, dupe), goes to shard `key mod N`, and a shard holds its
records in (chunk, dupe, key) order. Both paths apply this rule to the same
records, so they write the same bytes whatever runs them and in whatever
order the (chunk, dupe) groups are finished.
"""

import numpy as np

# Purpose key of the generator that draws the record keys (see pipeline._rng).
KEYS = 3


def shard_names(prefix, num_shards):
  """`PREFIX-00000-of-0000N` ...: the output files of `--num_output_shards=N`."""
  width = max(5, len(str(num_shards)))
  return [f"{prefix}-{i:0{width}d}-of-{num_shards:0{width}d}" for i in range(num_shards)]


def split(records, rng, num_shards):
  """Framed records of one (chunk, dupe) (a `writer.Records`) -> [records of shard s, sorted by
  key] for each s, as lists of memoryviews.

  `rng` is the (seed, chunk, dupe) generator of keys.
  """
  keys = rng.integers(0, 1 << 63, size=len(records), dtype=np.int64)
  order = np.argsort(keys, kind="stable")  # ties (p ~ n^2 / 2^64) keep record order
  shard_of = keys[order] % num_shards
  return [records.select(order[shard_of == s]) for s in range(num_shards)]
