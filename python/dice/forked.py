"""Native code that may crash, run in a forked child process.

torch-mlir's import and lowering are C++ that can abort or fault on a
program they do not handle (a uint8 floor division by a number faults in
its type conversion); in the user's process, under torch.compile, that
would end the user's program. In a child forked for the call, the crash
ends the child only, and the caller gets a DiceError it can fall back on.

A fork shares the parent's loaded modules and objects, so the call costs
no re-import; the child must not use CUDA (a forked child cannot), so
what crosses the fork is host data only, and it computes on one thread
(the parent's thread pools do not cross a fork). The result, or the exception,
comes back pickled through a pipe.
"""

import faulthandler
import os
import pickle
import signal
import sys

from dice.errors import DiceError


class NativeCrash(DiceError):
    """The forked call ended without a result: a signal or an exit."""


def _outcome(call):
    try:
        return pickle.dumps((True, call()))
    except BaseException as e:  # noqa: BLE001 - every failure goes back to the parent
        try:
            return pickle.dumps((False, e))
        except Exception:  # an exception that does not pickle: its text does
            return pickle.dumps((False, DiceError(f"{type(e).__name__}: {e}")))


def call_in_fork(call, what):
    """`call()` in a forked child: its (picklable) result, or its exception
    raised here; NativeCrash, naming `what`, where the child dies first."""
    # Buffered output would be written twice, by both processes.
    sys.stdout.flush()
    sys.stderr.flush()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        # The parent says what the crash was; a fault handler inherited
        # from it (pytest's, python -X faulthandler) would print the
        # child's stack on top.
        faulthandler.disable()
        # Only the forking thread lives on in the child: a parallel op would
        # wait forever for the OpenMP team the parent started. One thread,
        # as torch's own forked DataLoader workers run.
        if "torch" in sys.modules:
            sys.modules["torch"].set_num_threads(1)
        payload = _outcome(call)
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(payload)
        # No atexit handlers, no flushing the parent's buffers again.
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        payload = pipe.read()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        raise NativeCrash(f"{what} crashed ({name}); the program is left to the fallback")
    if not payload:
        raise NativeCrash(f"{what} exited with status {os.WEXITSTATUS(status)} and no result")
    ok, value = pickle.loads(payload)
    if ok:
        return value
    raise value
