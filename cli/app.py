"""`run(main)`: absl's app.run with Google's flags, user errors as one line, Ctrl-C as exit 130,
SIGTERM as exit 143.

A script with nothing to save on a signal (an export, a data tool) ends at
once: the handler raises nothing into the library code it lands in
(TensorFlow's tracing and saving, tf.data, numpy, Beam), where an exception can
come out as another one, or be printed with its traceback by the library,
before `run` could make it one line. It deletes the temporaries the atomic
writers hold (`fileio.atomic.remove_held`), prints the line and exits. A
trainer saves a checkpoint on SIGTERM and names the one kept on Ctrl-C: it
gets KeyboardInterrupt or `Stopped` to unwind with (but in `exit_on_signal`).

A healthy run prints no error-level line: on a machine without an NVIDIA
driver, TensorFlow's CUDA start-up logs `E... failed call to cuInit` (with
TF_CPP_MIN_LOG_LEVEL below 3), which reads as a failure; `run` drops that line. Nor does
a script that saves a SavedModel print TensorFlow's note that it renames the captured inputs
of a signature function (`Function ... contains input name(s) ... which will be renamed`):
a line of several KB per signature, about names no caller of the signatures sees.
"""

import contextlib
import ctypes
import errno
import logging
import os
import signal
import sys
import tempfile

from absl import app
from absl import flags
from absl import logging as absl_logging

from cli.errors import UserError
from fileio import atomic


# A path the user named that cannot be read or written as asked (read-only, a file where a
# folder should be, ...): the OSError names it, so it is one line, not a traceback.
_PATH_ERRORS = (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOENT, errno.ENOTDIR,
                errno.EISDIR, errno.EEXIST)


def _script_name():
  return os.path.splitext(os.path.basename(sys.argv[0]))[0]


def _has_cuda_driver():
  """Whether the NVIDIA driver library (what TensorFlow's cuInit calls into) can be loaded."""
  try:
    ctypes.CDLL("libcuda.so.1")
  except OSError:
    return False
  return True


def _find_gpus_without_cuinit_error():
  """Lets TensorFlow (if the script imported it) look for GPUs now, with stderr captured, and
  passes on all it wrote but the `failed call to cuInit` line, when there is no driver.

  With a driver, a failed cuInit means a GPU that cannot be used: its line stays.
  TensorFlow lists the GPUs first thing in absl's app.run anyway (an init
  callback of tf.distribute); that does not start its runtime.
  """
  if "tensorflow" not in sys.modules or _has_cuda_driver():
    return
  tf = sys.modules["tensorflow"]
  sys.stderr.flush()
  saved = os.dup(2)
  with tempfile.TemporaryFile() as captured:
    os.dup2(captured.fileno(), 2)
    try:
      tf.config.list_physical_devices("GPU")
    finally:
      sys.stderr.flush()
      os.dup2(saved, 2)
      os.close(saved)
    captured.seek(0)
    lines = captured.read().splitlines(keepends=True)
  os.write(2, b"".join(line for line in lines if b"failed call to cuInit" not in line))


# How TensorFlow's note on renamed signature inputs starts (signature_serialization.py).
_SIGNATURE_RENAME_NOTE = "Function `%s` contains input name(s)"


class _SignatureRenameNotes(logging.Filter):
  """Drops TensorFlow's log records that note renamed captured inputs of a signature."""

  def filter(self, record):
    return not str(record.msg).startswith(_SIGNATURE_RENAME_NOTE)


def drop_signature_rename_notes():
  """Keeps absl's logger, which TensorFlow's SavedModel code logs through, from printing the
  notes `_SignatureRenameNotes` drops (once per process); other records pass."""
  logger = absl_logging.get_absl_logger()
  if not any(isinstance(f, _SignatureRenameNotes) for f in logger.filters):
    logger.addFilter(_SignatureRenameNotes())


class Stopped(BaseException):
  """The run stopped on SIGINT (Ctrl-C) or SIGTERM; `run` exits 130 or 143.

  note: what the run kept and how to go on (None: the script's note). A
  BaseException, as KeyboardInterrupt, so that no `except Exception` holds it up.
  """

  def __init__(self, signum, note=None):
    super().__init__(signum, note)
    self.signum = signal.Signals(signum)
    self.note = note


class _Interrupt:
  """SIGINT's and SIGTERM's handler and a record of the signal: ends the process at once
  (`at_once`: see the module doc), or raises KeyboardInterrupt or `Stopped` for the code to
  unwind with.

  Raised, the exception lands between any two bytecodes; inside a library's
  cleanup it can come out as another exception (TensorFlow's tf_stack asserts
  "Concurrent access?" when it cuts a SavedModel save). Anything raised after
  the signal is the signal's doing, so `run` reports it as the stop.
  """
  signum = None
  at_once = True
  notes = {}  # {signal: what follows the line (a callable returning str or None)}

  @classmethod
  def line(cls, signum, note=None):
    """`<script>: interrupted; <note>` or `<script>: terminated: <note>`."""
    note = note or (cls.notes.get(signum) or (lambda: None))()
    if signum == signal.SIGTERM:
      return f"{_script_name()}: terminated" + (f": {note}" if note else "")
    return f"{_script_name()}: interrupted" + (f"; {note}" if note else "")

  @classmethod
  def handler(cls, signum, frame):
    del frame
    cls.signum = signal.Signals(signum)
    if cls.at_once:
      # Each step whatever the one before did: nothing may escape into the code it cut.
      for step in (atomic.remove_held,
                   sys.stderr.flush,  # what the script wrote comes before the line
                   lambda: os.write(2, (cls.line(cls.signum) + "\n").encode())):
        try:
          step()
        except Exception:  # pylint: disable=broad-except
          pass
      os._exit(128 + signum)  # pylint: disable=protected-access
    if signum == signal.SIGINT:
      raise KeyboardInterrupt
    raise Stopped(signum)


@contextlib.contextmanager
def exit_on_signal():
  """Within: SIGINT and SIGTERM end the process at once, also in a trainer.

  For a trainer's phase after its checkpoint is kept (its export), which has
  nothing to save. The notes (the checkpoint kept) are worked out on entry, so
  that the handler calls no TensorFlow.
  """
  saved = _Interrupt.at_once, _Interrupt.notes
  _Interrupt.notes = {signum: (lambda text=note(): text)
                      for signum, note in _Interrupt.notes.items() if note}
  _Interrupt.at_once = True
  try:
    yield
  finally:
    _Interrupt.at_once, _Interrupt.notes = saved


def _parse_flags(argv):
  """absl's flag parsing, with its errors (unknown flag, bad value, required flag missing)
  as the one line of a user error."""
  try:
    return flags.FLAGS(argv)
  except flags.Error as e:
    message = "; ".join(line.strip() for line in str(e).splitlines() if line.strip())
    print(f"{_script_name()}: error: {message} (--helpshort lists the flags)", file=sys.stderr)
    sys.exit(1)


def run(main, interrupted_note=None, terminated_note=None, saves_on_signal=False):
  """Runs `main(argv)` under absl and exits with its status.

  `main` returns None or an exit status. A flag absl cannot parse, a
  `UserError`, a full disk (an OSError ENOSPC or EDQUOT: the writers
  delete what they had written, and name the file they could not finish) and
  an OSError naming a path that cannot be used as asked (`_PATH_ERRORS`)
  print one line `<script>: error: <message>` and exit 1. KeyboardInterrupt
  prints `<script>: interrupted` plus `; interrupted_note()` (e.g. which
  checkpoint was kept), if given, and exits 130; SIGTERM (`Stopped`) prints
  `<script>: terminated` plus `: terminated_note()` and exits 143. A `Stopped`
  raised by `main` with a note of its own (a trainer that saved on the signal)
  prints that note instead. Any other exception raised after one of these
  signals (`_Interrupt`) is reported as the stop.

  The signals end the process at once (the module doc), unless
  `saves_on_signal` (a trainer, but in `exit_on_signal`): then they raise, and
  the lines above come once `main` has unwound.
  """
  def wrapped(argv):
    name = _script_name()

    def stopped(signum, note=None):
      print(_Interrupt.line(signum, note), file=sys.stderr)
      sys.exit(128 + signum)

    try:
      status = main(argv)
    except UserError as e:
      print(f"{name}: error: {e}", file=sys.stderr)
      sys.exit(1)
    except OSError as e:
      if e.errno in (errno.ENOSPC, errno.EDQUOT):
        where = f" writing {e.filename}" if e.filename else ""
        print(f"{name}: error: {e.strerror}{where}: free some space, then run the same "
              "command again", file=sys.stderr)
      elif e.errno in _PATH_ERRORS and e.filename:
        print(f"{name}: error: {e.filename}: {e.strerror}", file=sys.stderr)
      elif _Interrupt.signum:
        stopped(_Interrupt.signum)
      else:
        raise
      sys.exit(1)
    except KeyboardInterrupt:
      stopped(signal.SIGINT)
    except Stopped as e:
      stopped(e.signum, e.note)
    except Exception:  # pylint: disable=broad-except
      if _Interrupt.signum:
        stopped(_Interrupt.signum)
      raise
    sys.exit(status or 0)
  _Interrupt.at_once = not saves_on_signal
  _Interrupt.notes = {signal.SIGINT: interrupted_note, signal.SIGTERM: terminated_note}
  for signum in (signal.SIGINT, signal.SIGTERM):  # `_Interrupt`'s from here on
    signal.signal(signum, _Interrupt.handler)
  _find_gpus_without_cuinit_error()
  drop_signature_rename_notes()
  app.run(wrapped, flags_parser=_parse_flags)
