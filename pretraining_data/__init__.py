"""Streaming, parallel re-implementation of Google's `create_pretraining_data.py`.

Modules: `documents` (input files -> documents -> chunks), `instances`
(tokenized chunks -> sentence-pair spans), `masking` (spans -> masked model
inputs), `writer` (tf.train.Example wire format + atomic sharded TFRecords),
`features` (Google's feature spec, shared with run_pretraining) and `pipeline`
(workers, progress, summary). No module imports TensorFlow at import time, so
worker processes start fast.
"""
