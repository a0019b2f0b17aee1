"""What ends a script run early, as exceptions the script itself cannot catch.

Both derive from ``BaseException`` and neither is bound in a script's builtins, so
``except Exception`` (and a bare ``except``, rewritten to it) never catches them.
"""

from __future__ import annotations


class SandboxStop(BaseException):
    """Base of the signals that end a run; carries the message the model reads."""

    def __init__(self, message: str = "") -> None:
        super().__init__(message)
        self.message = message


class LimitExceeded(SandboxStop):
    """A resource limit was hit; ``limit`` names which one."""

    def __init__(self, limit: str = "", message: str = "") -> None:
        super().__init__(message or f"the {limit} limit was exceeded")
        self.limit = limit


class LimitInterrupt(LimitExceeded):
    """Raised asynchronously by the watchdog; the run records which limit tripped."""


class SecurityViolation(SandboxStop):
    """The script tried to reach something outside the sandbox."""


__all__ = ["LimitExceeded", "LimitInterrupt", "SandboxStop", "SecurityViolation"]
