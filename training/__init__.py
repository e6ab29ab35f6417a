"""Model-agnostic training machinery: the job skeleton every trainer runs on.

A trainer writes a `task.Task` (model, data per mode, loss, metrics) and runs
it with `runner.Runner` under `runtime.RuntimeOptions` (flags: `flags`).
Underneath: `inputs` (the TFRecord pipeline), `loop` (the custom training
loop), `evaluation` (eval and predict runs, eval_results.txt), `checkpointing`
(resumable checkpoints), `optimizer` (AdamWeightDecay, LAMB), `schedule`
(warmup + linear decay), `strategy` (tf.distribute strategies by name),
`precision` (mixed precision) and `summaries` (progress lines, TensorBoard).
`job` holds what every trainer script does with its options (the do_train /
do_eval / do_predict / export dispatch, Google's step count and warm-up),
`preemption` the stop on SIGTERM or Ctrl-C at the same step on every worker,
`output_lock` the one-run-per-output_dir lock.
"""
