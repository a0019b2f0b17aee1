"""Which script session an MCP request runs in: one client's, never another's, bounded.

The transport decides what "a client" is:

- stdio: the connection is the client, in either protocol era. Under 2026-07-28 the SDK
  makes a fresh ``Connection`` per request, so the session is keyed by the stream the
  requests arrive on, which lives as long as the client.
- HTTP with an ``Mcp-Session-Id`` (the handshake era): the MCP session.
- HTTP without one (2026-07-28 is stateless), and any request with no stream behind it
  (an in-process client of the SDK): a state handle the server mints, as the
  specification recommends (SEP-2567). ``run_code`` takes ``session``: ``"new"`` starts a
  session and its result names the handle; passing the handle again continues it. A call
  that passes none runs in a session of its own, closed when the call ends, so a client
  that never asks for one holds no worker.

A handle is a capability: 128 random bits, never derived from anything a client sees, and
mapped to a script-session name that is not the handle (idempotency keys carry session
names to the systems tools change, and must not carry a secret). Handles are bounded in
number, per client address and in all, and expire after ``idle_seconds`` unused.
"""

from __future__ import annotations

import secrets
import time
import uuid
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ._http import HTTP_SESSION, MAX_SESSIONS, MAX_SESSIONS_PER_CLIENT

NEW_HANDLE = "new"
ONE_OFF = "mcp-call-"  # a session for one call, closed when it ends
HANDLED = "mcp-handle-"  # the session behind a handle (its name is not the handle)
STREAM = "mcp-stream-"  # a stdio connection's session
HANDLE_PREFIX = "cs_"
IDLE_SECONDS = 300.0

# What the HTTP server's run_code says about its names, in place of the runtime's sentence.
HANDLE_GUIDE = (
    "Each call runs in a fresh namespace unless it passes session: session='new' starts a "
    "namespace whose names persist, and its result names a handle; pass that handle as "
    "session to the next run_code call to keep your names. A handle unused for "
    "{idle} expires."
)
SESSION_PARAMETER = (
    "Omit for a one-off script. 'new' starts a session whose names persist (the result "
    "gives its handle); a handle a previous result gave continues that session."
)


class HandleRefused(Exception):
    """A ``session`` argument the server cannot honour; the message is the model's."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Placement:
    """Where one call runs: its script session, the handle that names it (if any), and
    whether the session ends with the call."""

    session: str
    handle: str | None = None
    one_off: bool = False


@dataclass(kw_only=True, slots=True)
class _Handle:
    session: str
    client: str
    seen: float = field(default_factory=time.monotonic)


class ScriptSessions:
    """The script sessions of one MCP server's clients."""

    def __init__(
        self,
        close: Callable[[str], Awaitable[None]],
        *,
        max_handles: int = MAX_SESSIONS,
        per_client: int = MAX_SESSIONS_PER_CLIENT,
        idle_seconds: float = IDLE_SECONDS,
    ) -> None:
        self._close = close
        self.max_handles = max_handles
        self.per_client = per_client
        self.idle_seconds = idle_seconds
        self._handles: dict[str, _Handle] = {}
        # a stdio stream's session, for as long as the stream object lives (never an id()
        # that a later stream could be given again)
        self._streams: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()

    @staticmethod
    def stateless(context: Any) -> bool:
        """Whether nothing but a handle can name this request's client: no MCP session
        (HTTP of the 2026-07-28 era) and no stream (an in-process, single-exchange call)."""
        request = getattr(context, "request", None)
        if request is not None:
            return not request.headers.get("mcp-session-id")
        connection = getattr(getattr(context, "session", None), "_connection", None)
        return not getattr(connection, "has_standalone_channel", False)

    async def place(self, context: Any, handle: str | None) -> Placement:
        """The session for a request; ``handle`` is run_code's ``session`` argument."""
        own = self.session_of(context)
        if own is not None:
            return Placement(session=own)
        await self.expire()
        if handle == NEW_HANDLE:
            return await self._mint(_client_of(getattr(context, "request", None)))
        if handle is not None:
            return self._continued(handle)
        return Placement(session=f"{ONE_OFF}{uuid.uuid4().hex}", one_off=True)

    def session_of(self, context: Any) -> str | None:
        """The session a request's connection names (a stdio stream, an MCP session of the
        handshake era); None where only a handle can."""
        if self.stateless(context):
            return None
        request = getattr(context, "request", None)
        if request is not None:
            return f"{HTTP_SESSION}{request.headers.get('mcp-session-id')}"
        stream = context.session._connection.outbound
        known = self._streams.get(stream)
        if known is None:
            known = self._streams[stream] = f"{STREAM}{uuid.uuid4().hex}"
        return known

    def owns(self, handle: str, session: str) -> bool:
        held = self._handles.get(handle)
        return held is not None and held.session == session

    def seen(self, placement: Placement) -> None:
        """The call ended: its handle's idle time counts from now."""
        held = self._handles.get(placement.handle or "")
        if held is not None:
            held.seen = time.monotonic()

    async def release(self, placement: Placement) -> None:
        if placement.one_off:
            await self._close(placement.session)

    async def expire(self) -> None:
        """Close every handle's session unused for longer than the idle limit."""
        now = time.monotonic()
        for handle, held in list(self._handles.items()):
            if now - held.seen > self.idle_seconds:
                del self._handles[handle]
                await self._close(held.session)

    async def aclose(self) -> None:
        for handle in list(self._handles):
            held = self._handles.pop(handle)
            await self._close(held.session)

    @property
    def handles(self) -> int:
        return len(self._handles)

    async def _mint(self, client: str) -> Placement:
        mine = sorted(
            (held.seen, handle) for handle, held in self._handles.items() if held.client == client
        )
        while len(mine) >= self.per_client:  # this client's least recently used goes
            _, oldest = mine.pop(0)
            await self._close(self._handles.pop(oldest).session)
        if len(self._handles) >= self.max_handles:
            raise HandleRefused(
                f"the server already keeps {self.max_handles} sessions, the most it may; "
                "run without session, or try again once one has been idle for "
                f"{_duration(self.idle_seconds)}"
            )
        handle = f"{HANDLE_PREFIX}{secrets.token_urlsafe(16)}"
        held = _Handle(session=f"{HANDLED}{uuid.uuid4().hex}", client=client)
        self._handles[handle] = held
        return Placement(session=held.session, handle=handle)

    def _continued(self, handle: str) -> Placement:
        held = self._handles.get(handle)
        if held is None:
            raise HandleRefused(
                f"no session has the handle {_shown(handle)}: it never existed, or it expired "
                f"after {_duration(self.idle_seconds)} unused (its names are gone). Start "
                "again with session='new'."
            )
        held.seen = time.monotonic()
        return Placement(session=held.session, handle=handle)


def handle_guide(idle_seconds: float) -> str:
    return HANDLE_GUIDE.format(idle=_duration(idle_seconds))


def _client_of(request: Any) -> str:
    client = getattr(request, "client", None)
    return str(client.host) if client is not None else "unknown"


def _shown(handle: str) -> str:
    return repr(handle if len(handle) <= 40 else handle[:40] + "...")


def _duration(seconds: float) -> str:
    if seconds >= 120:
        return f"{seconds / 60:g} minutes"
    return f"{seconds:g} s"


__all__ = ["NEW_HANDLE", "HandleRefused", "Placement", "ScriptSessions", "handle_guide"]
