"""The worker template, started as codeact is imported, so its imports run beside the host's.

A host's first script waits for the template (a fresh interpreter importing the
restricted interpreter's world) and, before that, for the host's own imports: each about
a tenth of a second. Started when ``codeact`` is imported, the two overlap, and the
first process executor that uses the default worker takes the template over instead of
starting one. One that nobody takes over within ``UNCLAIMED_SECONDS`` is closed.

Never started where it could not be taken over or would outlive its purpose: in a worker
or a template (their environment turns it off), in a thread other than the main one (a
template's parent-death signal is the spawning thread's), where templates cannot run,
where ``sys.executable`` is not a Python interpreter (an embedding host), or when
``CODEACT_EARLY_TEMPLATE=0``. A process forked from the host never takes over its
parent's template.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Sequence

from ._worker_environment import (
    DEFAULT_WORKER_MODULE,
    EARLY_TEMPLATE_VARIABLE,
    WORKER_ENVIRONMENT,
    template_command,
)

UNCLAIMED_SECONDS = 60.0

TemplateProcess = tuple[subprocess.Popen[bytes], socket.socket]


def available() -> bool:
    """Forking from a template needs pidfds (Linux 5.3) and descriptor passing."""
    if not sys.platform.startswith("linux") or not hasattr(os, "pidfd_open"):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        return False
    return True


def spawn_template(command: Sequence[str], environment: dict[str, str]) -> TemplateProcess:
    """A template process and the host's end of its control socket; call it from the thread
    whose end should end the template (its parent-death signal)."""
    host_end, template_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        process = subprocess.Popen(
            [*command, str(template_end.fileno())],  # pass_fds keeps the number
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd="/",
            env=environment,
            start_new_session=True,
            pass_fds=(template_end.fileno(),),
        )
    except BaseException:
        host_end.close()
        raise
    finally:
        template_end.close()
    return process, host_end


class _Early:
    """The template started at import, until it is taken over or closed."""

    def __init__(
        self,
        command: list[str],
        environment: dict[str, str],
        unclaimed_seconds: float = UNCLAIMED_SECONDS,
    ) -> None:
        self.command = command
        self.environment = environment
        self.owner = os.getpid()
        self._lock = threading.Lock()
        self._held: TemplateProcess | None = spawn_template(command, environment)
        self._timer = threading.Timer(unclaimed_seconds, self.close)
        self._timer.daemon = True
        self._timer.name = "codeact-early-template"
        self._timer.start()

    def take(self, command: Sequence[str], environment: dict[str, str]) -> TemplateProcess | None:
        if os.getpid() != self.owner:  # a forked copy of the host: the template is not its own
            return None
        if list(command) != self.command or environment != self.environment:
            return None
        with self._lock:  # taken once, or closed once: whichever comes first
            held, self._held = self._held, None
        if held is None:
            return None
        self._timer.cancel()
        if held[0].poll() is not None:  # it died: the executor starts its own
            _close(held)
            return None
        return held

    def close(self) -> None:
        with self._lock:
            held, self._held = self._held, None
        if held is not None:
            _close(held)


def _close(held: TemplateProcess) -> None:
    process, control = held
    control.close()
    if process.poll() is None:
        process.kill()
    process.wait()


_early: _Early | None = None


def start_early_template() -> None:
    """Start the default worker template now, where that is safe and wanted (see above)."""
    global _early
    if _early is not None or os.environ.get(EARLY_TEMPLATE_VARIABLE, "1") == "0":
        return
    if threading.current_thread() is not threading.main_thread():
        return
    # an embedding host (a server binary, an application with Python inside) may name
    # itself as sys.executable: its first executor finds out, not its import
    if not os.path.basename(sys.executable).startswith("python") or not available():
        return
    # on failure the first executor starts one as usual, and reports what went wrong
    with contextlib.suppress(OSError):
        _early = _Early(template_command(DEFAULT_WORKER_MODULE), WORKER_ENVIRONMENT)


def take_early_template(
    command: Sequence[str], environment: dict[str, str]
) -> TemplateProcess | None:
    """The template started at import, when it was started as ``command`` with
    ``environment`` and is still running; each is taken over once."""
    early = _early
    return None if early is None else early.take(command, environment)


__all__ = [
    "UNCLAIMED_SECONDS",
    "available",
    "spawn_template",
    "start_early_template",
    "take_early_template",
]
