"""Stopping training cleanly on SIGTERM or Ctrl-C, at the same step on every worker.

What preemption sends (Compute Engine, TPU VMs, Kubernetes, Slurm) is SIGTERM,
then SIGKILL after a grace period. While `StopSignals` is entered, the first
SIGTERM or SIGINT sets a flag variable that the training loop reads at the end
of each step, inside its compiled multi-step loop: the step in flight is
finished and applied, the loop ends, and the trainer saves a checkpoint at that
step and raises `cli.Stopped`.

Under MultiWorkerMirroredStrategy every worker must stop after the same step
(each holds a copy of the weights, and each step is a collective all-reduce).
The loop packs the flag into the loss it all-reduces every step anyway
(`[loss, flag]`, mean over replicas): every worker sees the same reduced flag
after the same step, so the agreement costs no extra collective and no extra
round trip, and a signal to any one worker stops them all.

TensorFlow's `tf.distribute.experimental.PreemptionCheckpointHandler` does the
same job differently, and we learn from it rather than use it: it agrees on a
step through the coordination service's key-value store (the signalled worker
publishes "save after run N+1", the others acknowledge) and it counts calls of
its `run`, which must each train a single step. Our loop runs
`iterations_per_loop` steps per call (Google's TPU knob, our speed on CPU), so
the handler would stop up to that many steps late or cost a dispatch per step;
it also numbers its checkpoints by its own counter and adds that counter to the
checkpoint, where ours are `model.ckpt-<global step>` in Google's format (the
`init_checkpoint`s users load elsewhere), and it exits with its own status. What
we take from it: a Python-level SIGTERM handler that replaces the one
TensorFlow's coordination service installs (which swallows SIGTERM), and saving
on every worker at the agreed step (non-chief workers to a temporary directory).

The flag is set from a watcher thread (`signal.set_wakeup_fd`): Python runs a
signal handler only in the main thread between bytecodes, which never happens
while the main thread waits in a multi-step `tf.function`. A second Ctrl-C
goes to the previous handler (KeyboardInterrupt: out at once, with the last
checkpoint named).
"""

import os
import signal
import threading

import tensorflow as tf

SIGNALS = (signal.SIGTERM, signal.SIGINT)


class StopSignals:
  """While entered (in the main thread): SIGTERM and SIGINT set `flag` to 1.

  flag: a tf.Variable (int32, created outside any strategy scope) the
  training loop reads. signum: the first stop signal this process received, or None.
  """

  def __init__(self):
    self.flag = tf.Variable(0, trainable=False, dtype=tf.int32, name='stop_requested')
    self.signum = None
    self._previous = None
    self._seen_sigint = False

  def __enter__(self):
    self.flag.assign(0)
    self.signum = None
    self._seen_sigint = False
    if threading.current_thread() is not threading.main_thread():
      return self  # signal handlers live in the main thread; training elsewhere keeps its own
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    self._previous = ({s: signal.getsignal(s) for s in SIGNALS},
                      signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False), write_fd)
    for signum in SIGNALS:
      signal.signal(signum, self._handler)
    threading.Thread(target=self._watch, args=(read_fd,), name='StopSignals',
                     daemon=True).start()
    return self

  def __exit__(self, *exc_info):
    if self._previous is None:
      return
    handlers, wakeup_fd, write_fd = self._previous
    self._previous = None
    signal.set_wakeup_fd(wakeup_fd)
    for signum, handler in handlers.items():
      signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
    os.close(write_fd)  # the watcher reads end-of-file and ends

  def _watch(self, read_fd):
    """Sets the flag when the C-level handler writes a stop signal's number."""
    with os.fdopen(read_fd, 'rb', buffering=0) as pipe:
      while True:
        received = pipe.read(64)
        if not received:
          return
        stops = [signal.Signals(signum) for signum in received if signum in SIGNALS]
        if stops:
          if self.signum is None:
            self.signum = stops[0]
          self.flag.assign(1)

  def _handler(self, signum, frame):
    """Python-level handler (main thread, between any two bytecodes: maybe while a
    tf.function is traced, so it runs no TensorFlow op; the watcher sets the flag)."""
    signum = signal.Signals(signum)
    if signum == signal.SIGINT and self._seen_sigint:
      previous = self._previous[0][signal.SIGINT] if self._previous else None
      if callable(previous):
        previous(signum, frame)
      raise KeyboardInterrupt
    self._seen_sigint = self._seen_sigint or signum == signal.SIGINT
    if self.signum is None:
      self.signum = signum
