"""The tool registry: registration, scoping, advertisement, and the dispatch entry points."""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from . import _dispatch
from ._abort import AbortSignal
from ._call import ToolCall
from ._dispatch import PostHook, PreHook, Resolved
from ._events import DispatchEvent, EventListener
from ._exceptions import ToolDefinitionError
from ._json import JsonValue
from ._policy import ALLOW_ALL, Policy
from ._results import ToolExecutionResult
from ._tool import Tool, tool

ADVERTISED_FIELDS = ("name", "description", "parameters")


class _Changes:
    """A count of changes to any registry: what a registry resolved is kept until it moves."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()  # two threads changing registries each move it

    def note(self) -> None:
        with self._lock:
            self.count += 1


_CHANGES = _Changes()


class Disposer:
    """Unregisters exactly the registration that returned it; calling it twice is harmless."""

    def __init__(self, registry: ToolRegistry, registered: Tool) -> None:
        self._registry = registry
        self._tool = registered
        self.disposed = False

    def __call__(self) -> None:
        if not self.disposed:
            self.disposed = True
            self._registry._remove(self._tool)


class Owner:
    """Registers tools on behalf of one owner (a plugin, an agent) and disposes them together."""

    def __init__(self, registry: ToolRegistry) -> None:
        self._registry = registry
        self._disposers: list[Disposer] = []

    def register(self, definition: Tool | Callable[..., Any]) -> Disposer:
        disposer = self._registry.register(definition)
        self._disposers.append(disposer)
        return disposer

    def dispose(self) -> None:
        while self._disposers:
            self._disposers.pop()()


class ToolRegistry:
    """Tools by name, with a parent whose tools this registry sees unless it shadows them.

    ``execute`` is the one choke point every call passes through, native or made
    from inside a script: see :mod:`codeact.contract._dispatch` for the pipeline,
    which this registry hands what each call meets (:meth:`resolve`).
    """

    def __init__(
        self,
        *,
        parent: ToolRegistry | None = None,
        policy: Policy | None = None,
        pre_hooks: Sequence[PreHook] = (),
        post_hooks: Sequence[PostHook] = (),
        listeners: Sequence[EventListener] = (),
    ) -> None:
        self.parent = parent
        self._own: dict[str, Tool] = {}
        self._policy = policy
        self._pre_hooks = tuple(pre_hooks)
        self._post_hooks = tuple(post_hooks)
        self._listeners = list(listeners)
        self._version = 0
        self._writes: dict[str, bool] = {}  # overrides of what tools' annotations say
        self._resolved: dict[str, tuple[int, Resolved | None]] = {}

    # Registration -------------------------------------------------------------

    def register(self, definition: Tool | Callable[..., Any]) -> Disposer:
        """Add a tool (or a typed function, turned into one); returns its disposer."""
        registered = definition if isinstance(definition, Tool) else tool(definition)
        if registered.name in self._own:
            raise ToolDefinitionError(
                f"a tool named {registered.name!r} is already registered here"
            )
        self._own[registered.name] = registered
        self._version += 1
        _CHANGES.note()
        return Disposer(self, registered)

    def owner(self) -> Owner:
        """A handle whose ``dispose`` unregisters everything registered through it."""
        return Owner(self)

    def child(self, **options: Any) -> ToolRegistry:
        """A scoped registry (one per agent, say) that sees this one's tools."""
        return ToolRegistry(parent=self, **options)

    def _remove(self, registered: Tool) -> None:
        if self._own.get(registered.name) is registered:
            del self._own[registered.name]
            self._version += 1
            _CHANGES.note()

    # Lookup -------------------------------------------------------------------

    def get(self, name: str) -> Tool | None:
        """The tool ``name`` resolves to here: our own first, then the parent's."""
        found = self._own.get(name)
        if found is None and self.parent is not None:
            return self.parent.get(name)
        return found

    def resolve(self, name: str) -> Resolved | None:
        """The tool ``name`` resolves to here, with the policy, hooks and listeners its calls
        meet (read along the chain once); None for an unknown name. Kept per name until a
        registry changes."""
        seen = _CHANGES.count  # read first: a change made while resolving is not missed
        kept = self._resolved.get(name)
        if kept is not None and kept[0] == seen:
            return kept[1]
        found = self.get(name)
        resolved = (
            None
            if found is None
            else Resolved(
                tool=found,
                policy=self.policy,
                pre_hooks=self.pre_hooks,
                post_hooks=self.post_hooks,
                listened=self.has_listeners(),
            )
        )
        if resolved is not None:  # unknown names are a model's to invent: never kept
            self._resolved[name] = (seen, resolved)
        return resolved

    def writes(self, name: str) -> bool:
        """May a call of ``name`` change something? This registry's override (``mark``),
        else its parent's, else the tool's own annotations (no annotation: it may)."""
        registry: ToolRegistry | None = self
        while registry is not None:
            if name in registry._writes:
                return registry._writes[name]
            registry = registry.parent
        found = self.get(name)
        return True if found is None else found.writes

    def mark(self, name: str, *, writes: bool) -> None:
        """Say whether calls of ``name`` write, here and in child registries, whatever its
        annotations say (a server's tool whose hints are missing or wrong)."""
        self._writes[name] = writes

    def tools(self) -> list[Tool]:
        """Visible tools in a stable order: inherited ones first, then our own."""
        inherited = (
            [t for t in self.parent.tools() if t.name not in self._own]
            if self.parent is not None
            else []
        )
        return inherited + list(self._own.values())

    def names(self) -> list[str]:
        return [t.name for t in self.tools()]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __iter__(self) -> Iterator[Tool]:
        return iter(self.tools())

    def __len__(self) -> int:
        return len(self.tools())

    @property
    def version(self) -> int:
        """Changes whenever the visible tool set may have changed."""
        return self._version + (self.parent.version if self.parent is not None else 0)

    # Advertisement ------------------------------------------------------------

    def schemas(self) -> list[dict[str, JsonValue]]:
        """Each visible tool as exactly ``{name, description, parameters}``, nothing more."""
        return [advertise(t) for t in self.tools()]

    # Dispatch -----------------------------------------------------------------

    @property
    def own_policy(self) -> Policy | None:
        """The policy set on this registry itself (None: inherited or the default)."""
        return self._policy

    def set_policy(self, policy: Policy | None) -> None:
        self._policy = policy
        _CHANGES.note()

    @property
    def policy(self) -> Policy:
        if self._policy is not None:
            return self._policy
        return self.parent.policy if self.parent is not None else ALLOW_ALL

    @property
    def pre_hooks(self) -> tuple[PreHook, ...]:
        return (self.parent.pre_hooks if self.parent is not None else ()) + self._pre_hooks

    @property
    def post_hooks(self) -> tuple[PostHook, ...]:
        return (self.parent.post_hooks if self.parent is not None else ()) + self._post_hooks

    def add_listener(self, listener: EventListener) -> Callable[[], None]:
        """Receive every dispatch event; returns a function that stops it."""
        self._listeners.append(listener)
        _CHANGES.note()

        def stop() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)
                _CHANGES.note()

        return stop

    def has_listeners(self) -> bool:
        """Would an event emitted here reach anyone (here or in a parent)?"""
        return bool(self._listeners) or (self.parent is not None and self.parent.has_listeners())

    def emit(self, event: DispatchEvent) -> None:
        for listener in self._listeners:
            listener(event)
        if self.parent is not None:
            self.parent.emit(event)

    async def execute(
        self, call: ToolCall, *, parent: str | None = None, abort: AbortSignal | None = None
    ) -> ToolExecutionResult:
        """Run one call through the pipeline; always exactly one result citing ``call.id``."""
        resolved = self.resolve(call.name)
        if resolved is None:
            return _dispatch.unknown_tool(call, self.names(), emit=self.emit, parent=parent)
        return await _dispatch.execute(resolved, call, emit=self.emit, parent=parent, abort=abort)

    async def execute_many(
        self,
        calls: Sequence[ToolCall],
        *,
        parent: str | None = None,
        abort: AbortSignal | None = None,
        max_concurrent: int | None = None,
        wait_seconds: float | None = None,
        on_result: Callable[[int, ToolExecutionResult], None] | None = None,
    ) -> list[ToolExecutionResult]:
        """Run a batch: concurrency-safe tools together, others in order; results in call order.

        ``max_concurrent`` caps how many run at once; ``wait_seconds`` bounds each wait;
        ``on_result(index, result)`` hears each result as it comes.
        """
        return await _dispatch.execute_many(
            calls,
            run=lambda call: self.execute(call, parent=parent, abort=abort),
            concurrency_safe=self._concurrency_safe,
            emit=self.emit,
            parent=parent,
            abort=abort,
            max_concurrent=max_concurrent,
            wait_seconds=wait_seconds,
            on_result=on_result,
        )

    def _concurrency_safe(self, call: ToolCall) -> bool:
        registered = self.get(call.name)
        return registered is not None and registered.concurrency_safe


def advertise(registered: Tool) -> dict[str, JsonValue]:
    """The allowlisted, model-facing projection of one tool."""
    return {
        "name": registered.name,
        "description": registered.description,
        "parameters": copy.deepcopy(registered.parameters),
    }


__all__ = [
    "ADVERTISED_FIELDS",
    "Disposer",
    "Owner",
    "ToolRegistry",
    "advertise",
]
