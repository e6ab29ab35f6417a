"""Tests that run subprocesses: a fresh Python, a free port, a kill after the first
checkpoint, waiting for every process of a cluster, scripts forked from a Python that has
imported TensorFlow (`ForkServer`)."""

import gc
import json
import os
import runpy
import select
import signal
import socket
import subprocess
import sys
import time


def run_python(code):
  """Runs `code` in a fresh Python; asserts it exits 0; returns its stdout."""
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"), check=False)
  assert out.returncode == 0, out.stderr[-3000:]
  return out.stdout


def free_port():
  """A localhost TCP port that is free now (for a TF_CONFIG cluster)."""
  with socket.socket() as s:
    s.bind(("localhost", 0))
    return s.getsockname()[1]


def signal_after_first_checkpoint(process, output_dir, timeout, signum=signal.SIGKILL):
  """Waits for `output_dir/checkpoint`, then sends `signum` (default: a real kill, no clean-up).

  Returns what the process wrote to its pipes ((None, None) for those not piped).
  """
  try:
    deadline = time.time() + timeout
    while not (output_dir / "checkpoint").exists():
      assert process.poll() is None, "the run ended before its first save"
      assert time.time() < deadline, "no checkpoint in time"
      time.sleep(0.01)
    process.send_signal(signum)
    return process.communicate(timeout=timeout)
  finally:
    process.kill()
    process.wait()


def wait_for_success(processes, timeout):
  """Waits for every process (stderr piped as text); asserts each exited 0; returns the logs.

  Processes still running at the timeout, or after a failure, are killed.
  """
  try:
    logs = [p.communicate(timeout=timeout)[1] for p in processes]
  finally:
    for p in processes:
      p.kill()
      p.wait()
  for p, log in zip(processes, logs):
    assert p.returncode == 0, log[-5000:]
  return logs


class ForkServer:
  """A Python that imports `preload` (third-party libraries: TensorFlow's import costs
  ~3 s of CPU) once, then forks one child per `start`, which runs a script as
  `python script.py args...` would: the script and everything of ours imported afresh,
  sys.argv and sys.path[0] as Python sets them, stdout to /dev/null, stderr to a file,
  exit status and signals as a subprocess's. Nothing of ours is preloaded, so each script
  imports `cli` (its signal handlers) and its packages itself. Importing TensorFlow starts
  no thread (OpenBLAS's worker, from numpy, is fork-safe), so forking after it is safe; the
  children do start TensorFlow's runtime, the server never does. What differs from a fresh
  process: the import-time lines of the preloaded libraries (in the server's own stderr)
  and a signal while they import. A server runs one child at a time.
  """

  def __init__(self, preload, env, log_path):
    code = f"from tests import processes; processes.serve_forks({list(preload)!r})"
    with open(log_path, "w", encoding="utf-8") as log:
      self._server = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=log, env=env, bufsize=0)
    self._log_path = log_path

  def start(self, argv, cwd, stderr_path, umask=None):
    """Forks a child running `argv` ([script path, flags...]) in `cwd`; returns it."""
    request = dict(argv=[str(a) for a in argv], cwd=str(cwd), stderr=str(stderr_path),
                   umask=umask)
    self._server.stdin.write(json.dumps(request).encode() + b"\n")
    self._server.stdin.flush()
    return ForkedProcess(int(self._reply()), self)

  def _reply(self, timeout=None):
    """The server's next line (None if none came within `timeout` seconds)."""
    if timeout is not None and not select.select([self._server.stdout], [], [], timeout)[0]:
      return None
    line = self._server.stdout.readline()
    if not line:
      with open(self._log_path, encoding="utf-8", errors="replace") as f:
        raise RuntimeError(f"the fork server ended: {f.read()[-3000:]}")
    return line

  def close(self):
    self._server.stdin.close()
    self._server.wait()


class ForkedProcess:
  """A child of a `ForkServer`, with the part of subprocess.Popen's interface tests use."""

  def __init__(self, pid, server):
    self.pid = pid
    self.returncode = None
    self._server = server

  def poll(self, timeout=0):
    if self.returncode is None:
      line = self._server._reply(timeout)  # pylint: disable=protected-access
      if line is not None:
        self.returncode = int(line)
    return self.returncode

  def wait(self, timeout=None):
    if self.poll(timeout) is None:
      raise subprocess.TimeoutExpired(str(self.pid), timeout)
    return self.returncode

  def send_signal(self, signum):
    if self.returncode is None:
      os.kill(self.pid, signum)

  def kill(self):
    self.send_signal(signal.SIGKILL)


def serve_forks(preload):
  """`ForkServer`'s server: imports `preload`, then for each request line on stdin forks a
  child that runs the script, and answers its pid, then its exit status (as Popen's
  returncode: negative for a signal).

  The preloaded objects are frozen out of the garbage collector (`gc.freeze`, as Python's
  documentation advises before a fork): a child's collections, and its interpreter's at
  exit, would otherwise walk TensorFlow's ~300k objects and copy their pages (~0.6 s of CPU
  per child, most of a failing row's)."""
  for name in preload:
    __import__(name)
  gc.freeze()
  requests, replies = os.fdopen(0, "rb", buffering=0), os.fdopen(1, "wb", buffering=0)
  for line in iter(requests.readline, b""):
    request = json.loads(line)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
      _run_script(request)  # never returns: the child exits as Python exits a script
    replies.write(f"{pid}\n".encode())
    replies.write(f"{os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])}\n".encode())


def _run_script(request):
  """In a forked child: becomes `python <argv>`; its SystemExit, or an uncaught exception
  (traceback, exit 1), ends the interpreter as it ends a script's."""
  os.chdir(request["cwd"])
  if request["umask"] is not None:
    os.umask(request["umask"])
  null = os.open(os.devnull, os.O_RDWR)
  err = os.open(request["stderr"], os.O_WRONLY | os.O_APPEND)
  for fd, target in ((0, null), (1, null), (2, err)):
    os.dup2(target, fd)
  os.close(null)
  os.close(err)
  sys.stdin = open(0, encoding="utf-8", closefd=False)  # pylint: disable=consider-using-with
  script = os.path.abspath(request["argv"][0])
  sys.argv = [script] + request["argv"][1:]
  sys.path[0] = os.path.dirname(script)
  runpy.run_path(script, run_name="__main__")
  sys.exit(0)
