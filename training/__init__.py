"""Model-agnostic training machinery shared by run_pretraining.py and run_classifier.py.

Modules: `schedule` (warmup + linear decay), `optimizer` (AdamWeightDecay, LAMB),
`strategy` (tf.distribute strategies by name), `precision` (mixed precision),
`checkpointing` (resumable checkpoints), `summaries` (progress lines, TensorBoard),
`loop` (the custom training loop) and `evaluation` (eval runs, eval_results.txt).
"""
