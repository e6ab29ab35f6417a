"""The scripts' shared contract: a user error is one line and exit 1, Ctrl-C exit 130 (their
flags and --help: test_cli_options.py; every script's error cases: test_cli_error_table.py)."""

import os
import platform
import re
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import cli
from tests.paths import REPO
from tests.processes import ForkServer

pytestmark = pytest.mark.multiprocess
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(REPO))


def _script(tmp_path, body, saves_on_signal=False):
  """A script `demo.py` whose main runs `body` under cli.run."""
  path = tmp_path / "demo.py"
  path.write_text(textwrap.dedent("""
      import time
      import cli

      def main(argv):
      {}

      cli.run(main, saves_on_signal={})
      """).format(textwrap.indent(textwrap.dedent(body), "  "), saves_on_signal))
  return [sys.executable, str(path)]


@pytest.mark.skipif(platform.machine() != "x86_64", reason="oneDNN's kernels: x86 builds")
@pytest.mark.parametrize("setting, enabled", [(None, "True"), ("1", "True"), ("0", "False")])
def test_scripts_run_onednn_kernels_unless_the_user_turns_them_off(tmp_path, setting, enabled):
  """On by default on every x86 CPU (TensorFlow's own default is off without AVX-512 VNNI or
  BF16, as on this project's AVX2 hosts); the user's TF_ENABLE_ONEDNN_OPTS is kept."""
  env = {k: v for k, v in ENV.items() if k != cli.ONEDNN_ENV}
  if setting is not None:
    env[cli.ONEDNN_ENV] = setting
  out = subprocess.run(_script(tmp_path, """
      from tensorflow.python.util import _pywrap_util_port
      print(_pywrap_util_port.IsMklEnabled())
      """), capture_output=True, text=True, env=env, check=True)
  assert out.stdout.strip() == enabled


def test_user_error_is_one_line_and_exit_1(tmp_path):
  out = subprocess.run(_script(tmp_path, 'raise cli.FlagError("--x must be positive, got 0")'),
                       capture_output=True, text=True, env=ENV, check=False)
  assert (out.returncode, out.stderr) == (1, "demo: error: --x must be positive, got 0\n")


def test_a_flag_absl_cannot_parse_is_one_line_and_exit_1(tmp_path):
  out = subprocess.run(_script(tmp_path, "return 0") + ["--nonexistent=1"], capture_output=True,
                       text=True, env=ENV, check=False)
  assert (out.returncode, out.stderr) == (1, "demo: error: Unknown command line flag "
                                             "'nonexistent' (--helpshort lists the flags)\n")


def test_a_full_disk_is_one_line_and_exit_1(tmp_path):
  out = subprocess.run(_script(tmp_path, "import errno\nraise OSError(errno.ENOSPC, "
                                         "'No space left on device', '/data/out.txt')"),
                       capture_output=True, text=True, env=ENV, check=False)
  assert (out.returncode, out.stderr) == (1, "demo: error: No space left on device writing "
                                             "/data/out.txt: free some space, then run the same "
                                             "command again\n")


def test_a_bug_keeps_its_traceback(tmp_path):
  out = subprocess.run(_script(tmp_path, "return {}['missing']"), capture_output=True,
                       text=True, env=ENV, check=False)
  assert out.returncode == 1 and "Traceback" in out.stderr and "KeyError" in out.stderr


def test_exit_status_of_main(tmp_path):
  out = subprocess.run(_script(tmp_path, "return 3"), capture_output=True, text=True, env=ENV,
                       check=False)
  assert out.returncode == 3 and out.stderr == ""


@pytest.mark.parametrize("saves_on_signal", [False, True])
@pytest.mark.parametrize("signum, code, line", [(signal.SIGINT, 130, "demo: interrupted\n"),
                                                (signal.SIGTERM, 143, "demo: terminated\n")])
def test_ctrl_c_is_exit_130_and_sigterm_143(tmp_path, signum, code, line, saves_on_signal):
  """A script with nothing to save ends at once; a trainer (saves_on_signal) unwinds first."""
  body = """
      try:
        print("ready", flush=True)
        time.sleep(60)
      finally:
        print("cleaned up", flush=True)
      """
  process = subprocess.Popen(_script(tmp_path, body, saves_on_signal), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=ENV)
  assert process.stdout.readline() == "ready\n"
  process.send_signal(signum)
  stdout, stderr = process.communicate(timeout=30)
  assert (process.returncode, stderr, stdout) == (code, line, "cleaned up\n" * saves_on_signal)


def test_an_exception_caused_by_ctrl_c_is_still_exit_130(tmp_path):
  """In a trainer, Ctrl-C inside a library's cleanup can surface as another exception
  (TensorFlow's tf_stack asserts "Concurrent access?" when it cuts a SavedModel save)."""
  body = """
      try:
        print("ready", flush=True)
        time.sleep(60)
      finally:
        assert False, "Concurrent access?"
      """
  process = subprocess.Popen(_script(tmp_path, body, saves_on_signal=True),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
  assert process.stdout.readline() == "ready\n"
  process.send_signal(signal.SIGINT)
  _, stderr = process.communicate(timeout=30)
  assert (process.returncode, stderr) == (130, "demo: interrupted\n")


# Python callbacks that TensorFlow's C++ calls: nest's, and a tf.function's while it is traced.
_IN_TENSORFLOW_CALLBACKS = """
    import sys
    import tensorflow as tf
    from fileio import atomic
    atomic.atomic_write_text("committed.txt", "kept")
    structure = {"a": [tf.constant(1.0)] * 200, "b": (tf.constant(2.0),) * 200}
    with (atomic.atomic_output("out.txt") as f, atomic.staging_directory("export"),
          atomic.atomic_directory("export") as new):
      f.write("half")
      print("ready", file=sys.stderr, flush=True)
      while True:
        tf.nest.map_structure(lambda x: x, structure)
        tf.function(lambda s: tf.nest.map_structure(lambda x: x * 2.0, s)).get_concrete_function(
            structure)
    """


@pytest.fixture(name="tf_fork_server", scope="module")
def fixture_tf_fork_server(tmp_path_factory):
  server = ForkServer(("tensorflow",), ENV, tmp_path_factory.mktemp("server") / "server.log")
  yield server
  server.close()


@pytest.mark.parametrize("signum, delay", [(signal.SIGINT, 0.0), (signal.SIGINT, 0.3),
                                           (signal.SIGINT, 0.8), (signal.SIGTERM, 0.5),
                                           (signal.SIGINT, 1.5)])
def test_a_signal_inside_tensorflow_is_one_line_and_leaves_no_temporary(
    tmp_path, tf_fork_server, signum, delay):
  """A signal that lands in Python code TensorFlow's C++ called (where an exception comes out
  as a SystemError, its traceback printed by the library) ends the process at once: one line,
  the temporaries deleted, what was committed and the user's files kept."""
  (tmp_path / "export").mkdir()
  (tmp_path / "export" / "users.txt").write_text("mine")
  command = _script(tmp_path, _IN_TENSORFLOW_CALLBACKS)
  (tmp_path / "stderr.txt").touch()
  process = tf_fork_server.start(command[1:], tmp_path, tmp_path / "stderr.txt")
  try:
    while "ready" not in (tmp_path / "stderr.txt").read_text():
      assert process.poll(0.05) is None, (tmp_path / "stderr.txt").read_text()
    time.sleep(delay)
    process.send_signal(signum)
    code = process.wait(timeout=60)
  finally:
    process.kill()
  stderr = (tmp_path / "stderr.txt").read_text()
  name = "interrupted" if signum == signal.SIGINT else "terminated"
  assert (code, stderr.split("ready\n", 1)[1]) == (128 + signum, f"demo: {name}\n"), stderr
  assert sorted(os.listdir(tmp_path)) == ["committed.txt", "demo.py", "export", "stderr.txt"]
  assert ((tmp_path / "committed.txt").read_text(), os.listdir(tmp_path / "export")) == (
      "kept", ["users.txt"])


def test_a_healthy_tensorflow_run_prints_no_error_level_line(tmp_path):
  """TensorFlow's CUDA start-up logs `E... failed call to cuInit` on a machine without an
  NVIDIA driver, at any TF_CPP_MIN_LOG_LEVEL below 3; a newcomer reads it as a failure."""
  path = tmp_path / "tf_demo.py"
  path.write_text("import tensorflow as tf\nimport cli\n"
                  "cli.run(lambda argv: print(int(tf.constant(2) * 3)))\n")
  env = {k: v for k, v in ENV.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
  out = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env,
                       check=False)
  assert (out.returncode, out.stdout) == (0, "6\n"), out.stderr[-3000:]
  assert not re.findall(r"^E\d{4} .*", out.stderr, re.M)


@pytest.mark.parametrize("body, flags", [
    ('raise cli.FlagError("--x must be positive, got 0")', []), ("return 0", ["--nonexistent=1"]),
    ("return 3", []), ("return {}['missing']", []), ("print('out')\nraise SystemExit('gone')", [])])
def test_a_forked_script_ends_as_a_fresh_process_does(tmp_path, body, flags):
  """`ForkServer` (the error table's way to skip TensorFlow's import per row): the same exit
  status and stderr as a subprocess (a traceback's last line: its frames differ)."""
  command = _script(tmp_path, body) + flags
  fresh = subprocess.run(command, capture_output=True, text=True, env=ENV, check=False)
  server = ForkServer((), ENV, tmp_path / "server.log")
  try:
    (tmp_path / "stderr.txt").touch()
    forked = server.start(command[1:], tmp_path, tmp_path / "stderr.txt")
    forked.wait(timeout=60)
  finally:
    server.close()
  stderr = (tmp_path / "stderr.txt").read_text()
  assert forked.returncode == fresh.returncode
  assert (stderr.splitlines()[-1:], "Traceback" in stderr) == (
      fresh.stderr.splitlines()[-1:], "Traceback" in fresh.stderr)
  if "Traceback" not in stderr:
    assert stderr == fresh.stderr


def test_a_forked_script_takes_signals_as_a_fresh_process_does(tmp_path):
  command = _script(tmp_path, """
      import sys
      print("ready", file=sys.stderr, flush=True)
      time.sleep(60)
      """)
  server = ForkServer((), ENV, tmp_path / "server.log")
  try:
    (tmp_path / "stderr.txt").touch()
    forked = server.start(command[1:], tmp_path, tmp_path / "stderr.txt")
    while "ready" not in (tmp_path / "stderr.txt").read_text():
      assert forked.poll(0.05) is None
    forked.send_signal(signal.SIGINT)
    assert forked.wait(timeout=30) == 130
  finally:
    server.close()
  assert (tmp_path / "stderr.txt").read_text() == "ready\ndemo: interrupted\n"
