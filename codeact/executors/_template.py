"""A template process that workers are forked from: imports paid once, memory shared.

The host starts the template as it starts a worker (never forked from the host: a clean
interpreter with a scrubbed environment, holding no host state). The template imports
everything a worker needs, freezes those objects out of the garbage collector's reach
(so collections in a worker do not copy the pages they live on), then waits. For each
worker the host sends a folder and the worker's two pipe ends over a Unix socket; the
template forks, and the child becomes a worker exactly as a started one would: it
takes the pipes as its standard input and output and confines itself on ``init``.
The template runs no script and reads no message but the host's.

The template reaps its children and tells the host how each one ended; the host signals
a worker through a pidfd, which names that process and no other, even after it is gone.

Protocol (one message per datagram on a SOCK_SEQPACKET socket):

    host -> template   {"op": "fork", "workdir": "..."} + fds [worker stdin, worker stdout]
    template -> host   {"op": "ready"} | {"op": "forked", "pid": N} + fds [pidfd]
                       {"op": "exited", "pid": N, "code": C}  (C as Popen.returncode)
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import IO, Any

from ._confine import ConfinementReport, load_seccomp
from ._early_template import SpawnedProcess, spawn_template

MAX_CONTROL_BYTES = 65_536
READY_TIMEOUT_SECONDS = 30.0
# A fork is a copy of a process that has done all its imports: milliseconds, a moment
# under load. A template that takes longer is stopped or wedged, and is killed.
FORK_TIMEOUT_SECONDS = 5.0


# The host's side -------------------------------------------------------------------


class ForkedProcess:
    """A worker forked from the template, with the part of ``Popen`` the host uses."""

    def __init__(
        self, pid: int, pidfd: int, stdin: IO[bytes], stdout: IO[bytes], template: WorkerTemplate
    ) -> None:
        self.pid = pid
        self.stdin = stdin
        self.stdout = stdout
        self.returncode: int | None = None
        self.ended_with_template = False  # why it ended, when its template took it along
        self._template = template
        self._pidfd = pidfd
        self._ended = threading.Event()

    @property
    def orphaned(self) -> bool:
        """Its template is gone: the worker is dying of its parent-death signal, if not
        dead already (the template's reader may not have said so yet)."""
        return not self._template.alive

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended.wait(timeout):
            raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout or 0)
        assert self.returncode is not None
        return self.returncode

    def kill(self) -> None:
        if self._ended.is_set():
            return
        with contextlib.suppress(ProcessLookupError, OSError):  # gone already
            signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)

    def send_signal(self, number: int) -> None:
        if not self._ended.is_set():
            with contextlib.suppress(ProcessLookupError, OSError):
                signal.pidfd_send_signal(self._pidfd, number)

    def ended(self, code: int, *, with_template: bool = False) -> None:
        """The template reaped it (or died, taking it along)."""
        if not self._ended.is_set():
            self.returncode = code
            self.ended_with_template = with_template
            with contextlib.suppress(OSError):
                os.close(self._pidfd)
            self._ended.set()


class WorkerTemplate:
    """The host's handle on one template process: fork workers, learn how they end."""

    def __init__(self, process: SpawnedProcess, control: socket.socket) -> None:
        self.process = process
        self._control = control
        self._lock = threading.Lock()  # one fork request at a time
        self._replies: list[tuple[dict[str, Any], list[int]]] = []
        self._replied = threading.Condition()
        self._children: dict[int, ForkedProcess] = {}
        self._early_exits: dict[int, int] = {}  # children that ended before they were filed
        self._gone = False
        self.ready = threading.Event()
        self.failed = False
        self.settled = threading.Event()  # set once it is ready or has failed
        self.confinement = ConfinementReport()  # the template's own layers, once ready
        self.fork_timeout = FORK_TIMEOUT_SECONDS
        self._reader = threading.Thread(
            target=self._read, name="codeact-template-reader", daemon=True
        )

    @classmethod
    def spawn(cls, command: Sequence[str], environment: dict[str, str]) -> WorkerTemplate:
        """Start the template from the calling thread: its parent-death signal is that
        thread's, so call this where the host starts worker processes (the loop's thread).
        """
        return cls(*spawn_template(command, environment))

    def wait_ready(self, timeout: float = READY_TIMEOUT_SECONDS) -> None:
        """Block until the template has imported everything (OSError if it never does)."""
        self._control.settimeout(timeout)
        try:
            ready = _receive(self._control)[0]
        except (OSError, ValueError):
            ready = {}
        try:
            self.confinement = ConfinementReport.from_json(ready.get("confinement"))
        except ValueError:
            ready = {}
        if ready.get("op") != "ready":
            self.failed = True
            self.close()
            raise OSError("the worker template did not start")
        self._control.settimeout(None)
        self._reader.start()
        self.ready.set()

    def wait_ready_in_background(self) -> None:
        """``wait_ready`` in a thread of its own; ``ready`` or ``failed`` tells the outcome."""

        def wait() -> None:
            try:
                with contextlib.suppress(OSError):
                    self.wait_ready()
            finally:
                self.settled.set()

        threading.Thread(target=wait, name="codeact-template-start", daemon=True).start()

    @property
    def alive(self) -> bool:
        return not self._gone and not self.failed and self.process.poll() is None

    def fork(self, workdir: str) -> ForkedProcess:
        """A new worker in ``workdir``, its standard input and output piped to us."""
        to_worker_read, to_worker_write = os.pipe()
        from_worker_read, from_worker_write = os.pipe()
        deadline = time.monotonic() + self.fork_timeout
        try:
            # every wait has a deadline: a wedged template never holds a session up longer
            if not self._lock.acquire(timeout=self.fork_timeout):
                raise OSError("the worker template is busy past the fork deadline")
            try:
                if self._gone:
                    raise OSError("the worker template is gone")
                message = json.dumps({"op": "fork", "workdir": workdir}).encode()
                # never blocks: a template whose queue is full has long stopped reading
                socket.send_fds(
                    self._control,
                    [message],
                    [to_worker_read, from_worker_write],
                    socket.MSG_DONTWAIT,
                )
                reply, fds = self._next_reply(deadline)
            except (TimeoutError, BlockingIOError):
                self._wedged()
                raise OSError(
                    f"the worker template did not answer a fork in {self.fork_timeout:g} s;"
                    " it was killed"
                ) from None
            finally:
                self._lock.release()
        except BaseException:
            for fd in (to_worker_write, from_worker_read):
                os.close(fd)
            raise
        finally:
            os.close(to_worker_read)
            os.close(from_worker_write)
        pid = reply.get("pid")
        if reply.get("op") != "forked" or type(pid) is not int or len(fds) != 1:
            for fd in (*fds, to_worker_write, from_worker_read):
                os.close(fd)
            raise OSError(f"the worker template could not fork: {reply!r}")
        child = ForkedProcess(
            pid,
            fds[0],
            os.fdopen(to_worker_write, "wb", buffering=0),
            os.fdopen(from_worker_read, "rb", buffering=0),
            self,
        )
        with self._replied:
            self._children[pid] = child
            early = self._early_exits.pop(pid, None)
        if early is not None:  # it ended before we filed it
            child.ended(early)
        return child

    def _next_reply(self, deadline: float) -> tuple[dict[str, Any], list[int]]:
        with self._replied:
            while not self._replies:
                if self._gone:
                    raise OSError("the worker template is gone")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                self._replied.wait(min(left, 1.0))
            return self._replies.pop(0)

    def _wedged(self) -> None:
        """A template past a deadline: killed, so whoever asks next starts a new one (a
        reply it sends late can never be taken for the answer to another fork)."""
        self._gone = True
        with contextlib.suppress(OSError):
            self._control.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()

    def _read(self) -> None:
        """Every message from the template: replies to forks, and children's ends."""
        try:
            while True:
                message, fds = _receive(self._control)
                if message.get("op") == "exited":
                    self._child_ended(message.get("pid"), message.get("code"))
                else:
                    with self._replied:
                        self._replies.append((message, fds))
                        self._replied.notify_all()
        except (OSError, ValueError):
            pass
        with self._replied:  # the template is gone, and with it every child (their
            self._gone = True  # parent-death signal)
            children = list(self._children.values())
            self._children.clear()
            self._replied.notify_all()
        for child in children:
            child.ended(-signal.SIGKILL, with_template=True)

    def _child_ended(self, pid: object, code: object) -> None:
        if type(pid) is not int or type(code) is not int:
            return
        with self._replied:
            child = self._children.pop(pid, None)
            if child is None:
                self._early_exits[pid] = code
        if child is not None:
            child.ended(code)

    def close(self) -> None:
        """End the template (its children end with it) and reap it."""
        self._gone = True
        with contextlib.suppress(OSError):
            self._control.shutdown(socket.SHUT_RDWR)
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
        self.process.wait()
        if self._reader.is_alive() and self._reader is not threading.current_thread():
            self._reader.join(5)
        self._control.close()


def _receive(control: socket.socket) -> tuple[dict[str, Any], list[int]]:
    data, fds, _, _ = socket.recv_fds(control, MAX_CONTROL_BYTES, 2)
    if not data:
        for fd in fds:
            os.close(fd)
        raise OSError("the other end closed the socket")
    message = json.loads(data)
    if type(message) is not dict:
        for fd in fds:
            os.close(fd)
        raise ValueError("a control message is a JSON object")
    return message, list(fds)


# The template's side ------------------------------------------------------------------


def main() -> None:
    """``python -m codeact.executors._template <worker module> <control fd>``."""
    module, control_fd = sys.argv[1], int(sys.argv[2])
    _keep_only(control_fd)
    os.chdir("/")  # holds no folder of the host's
    control = socket.socket(fileno=control_fd)
    _die_with_host()
    import importlib

    # no collection while the template imports: what it loads lives as long as it does,
    # and each collection its allocations trigger scans the growing heap again
    gc.disable()
    load_seccomp()  # imported once for every worker (its error is reported by confinement)
    # asyncio's TLS layer: a worker opens no connection (seccomp refuses sockets), and
    # loading OpenSSL's bindings was a twentieth of the template's start
    sys.modules.setdefault("ssl", None)  # type: ignore[arg-type]
    importlib.import_module(module)  # the worker and everything it loads at start
    importlib.import_module("codeact.sandbox._interpreter")
    importlib.import_module("codeact.stdlib._modules")
    from codeact.executors._worker import PRELOADED

    for name in PRELOADED:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    from codeact.executors._confine import confine_template, resolve_interpreter_paths
    from codeact.stdlib import standard_sandbox

    # One session made and dropped: what a process's first session makes for all (its
    # shared classes sealed, the stand-ins and caches of every facade) is made here once,
    # not in each worker after its fork. It starts no thread and runs no script.
    standard_sandbox()
    resolve_interpreter_paths()  # after it: anything it imported is readable by workers
    confinement = confine_template()  # its children inherit it, then confine themselves further
    # What is here now is shared with every worker: never scanned, never copied. Frozen
    # without a collection first: the little garbage the imports left costs less memory
    # than a full pass costs time on the path of a host's first script.
    gc.freeze()
    gc.enable()  # a worker collects its scripts' garbage
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda number, frame: None)
    control.sendall(json.dumps({"op": "ready", "confinement": confinement.to_json()}).encode())
    while True:
        readable, _, _ = select.select([control.fileno(), wake_read], [], [])
        if wake_read in readable:
            with contextlib.suppress(BlockingIOError, OSError):
                os.read(wake_read, 512)
        _reap(control)
        if control.fileno() in readable:
            try:
                message, fds = _receive(control)
            except (OSError, ValueError):
                os._exit(0)  # the host is gone: so are we (and our children, by signal)
            if message.get("op") == "fork" and len(fds) == 2:
                _fork(control, module, str(message.get("workdir")), fds, (wake_read, wake_write))
            else:
                for fd in fds:
                    os.close(fd)


def _keep_only(control_fd: int) -> None:
    """Close every descriptor but the standard streams and the control socket: whatever
    else the host let this process inherit, no worker forked from it holds. Listed from
    /proc, not closed up to the descriptor limit: a host may hold descriptors above a
    soft limit it lowered after opening them."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd != control_fd:
            with contextlib.suppress(OSError):  # the listing's own, closed already
                os.close(fd)


def _die_with_host() -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    parent = os.getppid()
    libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(1)


def _reap(control: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        code = os.waitstatus_to_exitcode(status)
        with contextlib.suppress(OSError):
            control.sendall(json.dumps({"op": "exited", "pid": pid, "code": code}).encode())


def _fork(
    control: socket.socket, module: str, workdir: str, fds: list[int], wake: tuple[int, int]
) -> None:
    pid = os.fork()
    if pid == 0:  # the worker
        try:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            control.close()
            for fd in wake:
                os.close(fd)
            os.setsid()
            os.dup2(fds[0], 0)
            os.dup2(fds[1], 1)
            for fd in fds:
                os.close(fd)
            os.chdir(workdir)
            # the module the template imported, run by its own main() as it is: executing
            # it again as __main__ (runpy) took 5-7 ms of every fork. A module whose
            # main() is another's (imported, then called with arguments) runs as __main__.
            run = getattr(sys.modules.get(module), "main", None)
            if callable(run) and getattr(run, "__module__", None) == module:
                run()
            else:
                import runpy

                runpy.run_module(module, run_name="__main__", alter_sys=True)
        finally:
            os._exit(1)
    for fd in fds:
        os.close(fd)
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        os.kill(pid, signal.SIGKILL)
        control.sendall(json.dumps({"op": "failed", "reason": "no pidfd"}).encode())
        return
    try:
        socket.send_fds(control, [json.dumps({"op": "forked", "pid": pid}).encode()], [pidfd])
    finally:
        os.close(pidfd)


if __name__ == "__main__":
    main()
