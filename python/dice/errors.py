"""The exceptions the `dice` package raises. Library code raises them with a
message a user can act on; only the command line (`dice.cli`) turns them
into an exit status."""


class DiceError(RuntimeError):
    """Something dice cannot do, and why."""


class ToolNotFound(DiceError):
    """A C++ tool of the build (dice-opt, dice-plan, ...) is not where dice
    looks for it."""


class ToolFailed(DiceError):
    """A C++ tool exited with an error; the message holds its stderr."""

    def __init__(self, tool, returncode, stderr):
        self.tool, self.returncode, self.stderr = tool, returncode, stderr
        detail = stderr.strip()
        super().__init__(f"{tool} exited with {returncode}" + (f":\n{detail}" if detail else ""))


class ProgramError(DiceError):
    """A user's program file that dice cannot load (no `Model`, a factory
    that raises, inputs that are not tensors)."""
