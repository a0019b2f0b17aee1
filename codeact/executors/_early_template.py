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

import _socket
import _thread
import os
import sys

from ._worker_environment import (
    DEFAULT_WORKER_MODULE,
    EARLY_TEMPLATE_VARIABLE,
    WORKER_ENVIRONMENT,
    template_command,
)

TYPE_CHECKING = False  # typing is not imported yet: it would take 5 ms
if TYPE_CHECKING:
    from collections.abc import Sequence
    from socket import socket

# Imported first thing in ``import codeact``: what this module needs before the spawn is
# what Python has loaded at start (os, sys) and two C modules. subprocess, socket and
# threading would have delayed the template's start by about 15 ms of imports.

UNCLAIMED_SECONDS = 60.0


def available() -> bool:
    """Forking from a template needs pidfds (Linux 5.3) and descriptor passing."""
    if not sys.platform.startswith("linux") or not hasattr(os, "pidfd_open"):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        return False
    return True


class SpawnedProcess:
    """The template process: the part of ``Popen`` the host uses (pid, poll, wait, kill).

    Signalled through a pidfd, which names this process and no other even once it is
    reaped; the pidfd is closed when the process is reaped.
    """

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._pidfd: int | None = os.pidfd_open(pid)
        self._state = _thread.allocate_lock()

    def poll(self) -> int | None:
        if self.returncode is None:
            self._reap(os.WNOHANG)
        return self.returncode

    def wait(self) -> int:
        while self.returncode is None:
            self._reap(0)
        return self.returncode

    def kill(self) -> None:
        import contextlib
        import signal

        with self._state:
            if self._pidfd is not None:
                with contextlib.suppress(ProcessLookupError):  # ended, not reaped yet
                    signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)

    def _reap(self, options: int) -> None:
        try:
            pid, status = os.waitpid(self.pid, options)
        except ChildProcessError:  # reaped elsewhere (SIGCHLD ignored): as Popen says, 0
            pid, status = self.pid, 0
        if pid == self.pid:
            with self._state:
                if self.returncode is None:
                    self.returncode = os.waitstatus_to_exitcode(status)
                    fd, self._pidfd = self._pidfd, None
                    if fd is not None:
                        os.close(fd)


TemplateProcess = tuple[SpawnedProcess, "socket"]  # the host's handle and control socket
_RawTemplate = tuple[SpawnedProcess, _socket.socket]


def spawn_template(command: Sequence[str], environment: dict[str, str]) -> TemplateProcess:
    """A template process and the host's end of its control socket; call it from the thread
    whose end should end the template (its parent-death signal)."""
    return _as_socket(_spawn(command, environment))


def _spawn(command: Sequence[str], environment: dict[str, str]) -> _RawTemplate:
    """Start the template with posix_spawn: in a session of its own, its standard streams
    on /dev/null, its end of the control socket passed by number (the template closes
    any other descriptor the host let it inherit)."""
    host_end, template_end = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
    try:
        # dup2 onto another number clears close-on-exec for the child's copy alone
        passed = 3 if template_end.fileno() != 3 else 4
        actions = [
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
            (os.POSIX_SPAWN_DUP2, 1, 2),
            (os.POSIX_SPAWN_DUP2, template_end.fileno(), passed),
        ]
        pid = os.posix_spawn(
            command[0], [*command, str(passed)], environment, file_actions=actions, setsid=True
        )
        try:
            process = SpawnedProcess(pid)
        except OSError:  # no pidfd for it: ended and reaped here, not left behind
            import signal

            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise
    except BaseException:
        host_end.close()
        raise
    finally:
        template_end.close()
    return process, host_end


def _as_socket(raw: _RawTemplate) -> TemplateProcess:
    import socket

    process, control = raw
    return process, socket.socket(fileno=control.detach())


def _close(held: _RawTemplate | TemplateProcess) -> None:
    process, control = held
    control.close()
    if process.poll() is None:
        process.kill()
    process.wait()


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
        self._held: _RawTemplate | None = _spawn(command, environment)
        import threading  # after the spawn: threading is 3 ms of imports

        self._lock = threading.Lock()
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
        return _as_socket(held)

    def close(self) -> None:
        with self._lock:
            held, self._held = self._held, None
        if held is not None:
            _close(held)


_early: _Early | None = None


def start_early_template() -> None:
    """Start the default worker template now, where that is safe and wanted (see above)."""
    global _early
    if _early is not None or os.environ.get(EARLY_TEMPLATE_VARIABLE, "1") == "0":
        return
    if not _on_main_thread():
        return
    # an embedding host (a server binary, an application with Python inside) may name
    # itself as sys.executable: its first executor finds out, not its import
    if not os.path.basename(sys.executable).startswith("python") or not available():
        return
    try:
        _early = _Early(template_command(DEFAULT_WORKER_MODULE), WORKER_ENVIRONMENT)
    except OSError:  # the first executor starts one as usual, and reports what went wrong
        return


def _on_main_thread() -> bool:
    if "threading" not in sys.modules and _thread._count() == 0:
        return True  # the only thread there is (threading is imported later, after the spawn)
    import threading

    return threading.current_thread() is threading.main_thread()


def take_early_template(
    command: Sequence[str], environment: dict[str, str]
) -> TemplateProcess | None:
    """The template started at import, when it was started as ``command`` with
    ``environment`` and is still running; each is taken over once."""
    early = _early
    return None if early is None else early.take(command, environment)


__all__ = [
    "UNCLAIMED_SECONDS",
    "SpawnedProcess",
    "TemplateProcess",
    "available",
    "spawn_template",
    "start_early_template",
    "take_early_template",
]
