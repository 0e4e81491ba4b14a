"""What the torch-mlir hook raises: kinds of `dice.errors.DiceError`."""

from dice.errors import DiceError


class ModuleError(DiceError):
    """A module the backend cannot compile: it does not parse, is not
    linalg-on-tensors, or does not lower; the message has the location."""


class InvocationError(DiceError):
    """A call of a compiled function with arguments that do not fit it."""


class KernelLinkError(DiceError):
    """The accepted kernels' trampolines cannot be built or found."""
