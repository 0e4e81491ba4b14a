"""dice.forked: a call in a forked child comes back as its result, its
exception, or NativeCrash where the child dies; the caller's process goes
on either way."""

import os
import re
import signal

import pytest

from dice.forked import NativeCrash, call_in_fork


def test_the_result_comes_back():
    big = "x" * (1 << 20)  # more than a pipe holds at once
    assert call_in_fork(lambda: (os.getpid(), big), "a call")[1] == big
    assert call_in_fork(lambda: os.getpid(), "a call") != os.getpid()


def test_the_exception_comes_back_with_its_type():
    with pytest.raises(ZeroDivisionError):
        call_in_fork(lambda: 1 / 0, "a call")


def test_an_exception_that_does_not_pickle_comes_back_as_its_text():
    class Local(Exception):  # a local class: pickle cannot find it
        pass

    def fail():
        raise Local("the reason")

    with pytest.raises(Exception, match="Local: the reason"):
        call_in_fork(fail, "a call")


@pytest.mark.parametrize("sig", [signal.SIGSEGV, signal.SIGABRT])
def test_a_signal_is_a_native_crash(sig):
    with pytest.raises(NativeCrash, match=re.escape(f"the lowering crashed ({sig.name})")):
        call_in_fork(lambda: os.kill(os.getpid(), sig), "the lowering")
    assert call_in_fork(lambda: 42, "a call") == 42  # and the caller goes on


def test_an_exit_without_a_result_is_a_native_crash():
    with pytest.raises(NativeCrash, match="exited with status 3"):
        call_in_fork(lambda: os._exit(3), "a call")


FORK_AFTER_THREADS = """
import torch
from dice.forked import call_in_fork
torch.set_num_threads(2)
big = torch.ones(1 << 24)
big.double().sum()  # the parent's OpenMP threads are up
print(call_in_fork(lambda: big.to(torch.float64).sum().item(), "a call"))
"""


def test_a_child_of_a_process_with_torch_threads_computes():
    """A forked child has only the thread that forked: the OpenMP team the
    parent started is gone, and a parallel op in the child waited for it
    forever."""
    import subprocess
    import sys
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, "-c", FORK_AFTER_THREADS], capture_output=True,
                          text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    assert float(proc.stdout.split()[-1]) == 1 << 24
