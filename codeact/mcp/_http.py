"""Serving MCP over streamable HTTP: sessions capped per client, and freed when they end.

Every MCP session of the handshake era holds a script session (and so a worker process).
An unauthenticated client can open as many as it likes, so the server caps them: in all
(the SDK's own limit, answered 503) and per client address (answered 429 here, before
the SDK makes the session). A session a client ends (DELETE) closes its script session
at once; one a client forgets ends when idle, on the SDK's side and the executor's.
The runtime is entered for the server's life, so its pool, reaper and cleanup run, and
uvicorn's handling of SIGTERM and SIGINT ends in the runtime's close.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from dataclasses import dataclass
from typing import Any

from ..runtime._modes import Runtime
from ._stopping import Stopping

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_SESSIONS = 32
MAX_SESSIONS_PER_CLIENT = 8
IDLE_SECONDS = 300.0
TASK_AFTER_SECONDS = 1.0  # a run longer than this becomes a task, for clients that take them
MAX_BODY_BYTES = 4 * 1024 * 1024  # the SDK's own bound on a request body
SESSION_HEADER = b"mcp-session-id"
HTTP_SESSION = "mcp-http-"  # the script session of MCP session X is HTTP_SESSION + X


@dataclass
class _Held:
    client: str
    seen: float


class ClientSessions:
    """ASGI middleware: at most ``per_client`` open MCP sessions per client address; a
    session's script session closed as soon as its client ends it."""

    def __init__(
        self, app: ASGIApp, runtime: Runtime, *, per_client: int, idle_seconds: float
    ) -> None:
        self.app = app
        self.runtime = runtime
        self.per_client = per_client
        self.idle_seconds = idle_seconds
        self._open: dict[str, _Held] = {}  # MCP session id -> who holds it, last seen
        self._opening: dict[str, int] = {}  # client -> sessions it is opening right now
        self.posts_in_flight = 0  # requests whose answer is not all sent yet

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope.get("method") != "POST":  # a GET's event stream stays open: not counted
            await self._route(scope, receive, send)
            return
        self.posts_in_flight += 1
        try:
            await self._route(scope, receive, send)
        finally:
            self.posts_in_flight -= 1

    async def _route(self, scope: Scope, receive: Receive, send: Send) -> None:
        session = _header(scope, SESSION_HEADER)
        if session is not None:
            await self._in_session(session, scope, receive, send)
        elif scope.get("method") == "POST":
            await self._without_session(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def _in_session(self, session: str, scope: Scope, receive: Receive, send: Send) -> None:
        held = self._open.get(session)
        if held is not None:
            held.seen = time.monotonic()
        status = await _forwarded(self.app, scope, receive, send)
        if scope.get("method") == "DELETE" and status is not None and status < 300:
            self._open.pop(session, None)  # the client ended it: free its worker now
            await self.runtime.close_session(HTTP_SESSION + session)

    async def _without_session(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A request without a session: an ``initialize`` opens one, if the client may."""
        body = await _body(receive)
        client = _client(scope)
        opening = False
        if body is not None:
            try:
                opening = _is_initialize(body)
            except RecursionError:  # nested past any parser's depth: answered here, not a 500
                await _refuse(send, 400, "the request body is nested too deeply to read")
                return
        if opening:
            self._forget_idle()
            held = sum(1 for h in self._open.values() if h.client == client)
            if held + self._opening.get(client, 0) >= self.per_client:
                await _refuse(send, 429, self._too_many(client))
                return
            self._opening[client] = self._opening.get(client, 0) + 1  # counted while it opens
        opened: list[str] = []

        async def noting(message: Message) -> None:
            if message["type"] == "http.response.start":
                for name, value in message.get("headers", ()):
                    if name.lower() == SESSION_HEADER:
                        opened.append(value.decode("latin-1"))
            await send(message)

        try:
            await self.app(scope, _replayed(body or b"", receive), noting)
        finally:
            for session in opened:
                self._open[session] = _Held(client, time.monotonic())
            if opening:
                self._opening[client] -= 1
                if not self._opening[client]:
                    del self._opening[client]

    def _too_many(self, client: str) -> str:
        return (
            f"client {client} already holds {self.per_client} open MCP sessions, the most one "
            "client may; end one (DELETE with its Mcp-Session-Id) before opening another"
        )

    def _forget_idle(self) -> None:
        """Sessions unseen for longer than the idle limit no longer count (the SDK ends
        them, and the executor's reaper closes their script sessions)."""
        now = time.monotonic()
        for session, held in list(self._open.items()):
            if now - held.seen > self.idle_seconds:
                del self._open[session]


def _header(scope: Scope, wanted: bytes) -> str | None:
    for name, value in scope.get("headers", ()):
        if name.lower() == wanted:
            return str(value.decode("latin-1"))
    return None


def _client(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


async def _body(receive: Receive) -> bytes | None:
    """The request body; None when it is larger than any MCP request may be (the SDK
    then refuses it, and it is not read twice)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


def _replayed(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # what comes after: the client leaving

    return replay


def _is_initialize(body: bytes) -> bool:
    """Whether the body opens a session; text that is no JSON is the SDK's to answer."""
    try:
        request = json.loads(body)
    except ValueError:
        return False
    requests = request if isinstance(request, list) else [request]
    return any(isinstance(r, dict) and r.get("method") == "initialize" for r in requests)


async def _forwarded(app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> int | None:
    status: list[int] = []

    async def noting(message: Message) -> None:
        if message["type"] == "http.response.start":
            status.append(int(message["status"]))
        await send(message)

    await app(scope, receive, noting)
    return status[0] if status else None


async def _refuse(send: Send, status: int, text: str) -> None:
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": text}}
    body = json.dumps(error).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def serve_http(
    runtime: Runtime,
    server: Any,
    *,
    host: str,
    port: int,
    max_sessions: int = MAX_SESSIONS,
    max_sessions_per_client: int = MAX_SESSIONS_PER_CLIENT,
    idle_seconds: float = IDLE_SECONDS,
    note: str = "",
    stopping: Stopping | None = None,
) -> None:
    """Serve ``server`` (an MCP ``Server`` over ``runtime``) on ``host:port`` until SIGTERM
    or SIGINT; the runtime is entered for the server's life and closed after it. One
    line on standard error says where, with ``note`` after it. ``stopping`` (the one the
    server was made with) answers the calls in flight before the connections close."""
    import uvicorn

    class AnsweringServer(uvicorn.Server):
        async def shutdown(self, sockets: Any = None) -> None:
            if stopping is not None:  # while their connections are still open
                await stopping.stop()
            await super().shutdown(sockets)

    app = server.streamable_http_app(
        host=host, max_sessions=max_sessions, session_idle_timeout=idle_seconds
    )
    limited = ClientSessions(
        app, runtime, per_client=max_sessions_per_client, idle_seconds=idle_seconds
    )
    config = uvicorn.Config(limited, host=host, port=port, log_level="warning", lifespan="on")
    http = AnsweringServer(config)
    if stopping is not None:  # the answers are on the wire once every POST's response is sent
        stopping.settled_when(lambda: limited.posts_in_flight == 0)
    async with runtime:  # the warm pool, the idle reaper, and every worker closed at the end
        prepare = getattr(runtime.executor, "prepare", None)
        if prepare is not None:  # the first clients' workers fork from the template
            await prepare()
        with _signals_survived(http):  # from here on a stop signal stops it cleanly
            where = f"http://{host}:{port}/mcp"
            print(f"codeact: serving MCP on {where}{note}", file=sys.stderr, flush=True)
            await http.serve()  # returns on SIGTERM or SIGINT, after a graceful shutdown


@contextlib.contextmanager
def _signals_survived(http: Any) -> Iterator[None]:
    """uvicorn raises the signal that stopped it again once it has shut down, and the
    default action would end the process before the runtime closes its workers: while
    serving, those signals only ask the server to stop. uvicorn has its own handlers
    meanwhile; one that comes before uvicorn installs them (a client that stops the
    server as soon as it says where it serves) still stops it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(number: int, frame: Any) -> None:
        http.should_exit = True  # before uvicorn serves, it exits once started; after, no-op

    noted = {number: signal.signal(number, stop) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, handler in noted.items():
            signal.signal(number, handler)


__all__ = ["ClientSessions", "serve_http"]
