"""dice's own compiles, kept out of the compile of the user's frame.

The backend runs while Dynamo compiles the user's frame, and Dynamo's
tracing context is then the current one: make_fx and Inductor take its fake
mode and shape env for whatever they compile. A graph dice compiles for its
own use (a partition timed as Inductor runs it, the graph rebuilt around
dice's kernels) would then leave symbols for its own inputs in Dynamo's
shape env, symbols with no source in the user's frame. Inductor's guards on
them (32-bit indexing of a GPU matmul template) break Dynamo's guard
building after the backend has returned, where no fallback can catch it.
Outside that context such a compile makes a fake mode and shape env of its
own, and Dynamo's guards stay those of the user's graph.
"""

import contextlib

import torch


@contextlib.contextmanager
def outside_dynamo():
    """No Dynamo tracing context while the block runs (restored after)."""
    with torch._guards.tracing(None):
        yield
