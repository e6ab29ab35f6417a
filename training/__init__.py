"""Model-agnostic training machinery under run_pretraining and run_classifier.

Modules: `schedule` (warmup + linear decay), `optimizer` (AdamWeightDecay,
LAMB), `strategy` (tf.distribute strategies by name), `precision` (mixed
precision), `checkpointing` (resumable checkpoints), `summaries` (progress
lines, TensorBoard), `loop` (the custom training loop) and `evaluation` (eval
runs, eval_results.txt).
"""
