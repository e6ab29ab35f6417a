"""Streaming, parallel re-implementation of Google's `create_pretraining_data.py`.

Modules: `documents` (input files -> documents -> chunks), `instances`
(tokenized chunks -> sentence-pair spans), `masking` (spans -> masked model
inputs), `writer` (tf.train.Example wire format + atomic sharded TFRecords),
`features` (Google's feature spec, shared with run_pretraining), `pipeline`
(workers, progress, summary), `shards` (the record-to-shard rule) and
`beam_pipeline` (the same job on Apache Beam, an optional dependency). No module
imports TensorFlow or Beam at import time, so worker processes start fast.
"""
