"""Modes and the runtime: one registry, advertised natively, as code, or both, per request."""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from ..code_mode._discovery import DESCRIBE, SEARCH_TOOLS, discovery_tools
from ..code_mode._run_code import RUN_CODE, SCRIPT_SESSION, describe_run_code, run_code_tool
from ..contract._abort import AbortSignal
from ..contract._call import ToolCall
from ..contract._exceptions import ErrorCode, ToolError, UsageError
from ..contract._json import JsonValue, thaw
from ..contract._registry import ToolRegistry, advertise
from ..contract._results import ToolExecutionResult, failure
from ..contract._tool import Tool
from ..executors._in_process import Executor
from ..sandbox import Limits
from ._background import BackgroundLoop, close_at_exit

if TYPE_CHECKING:  # what durable runtimes use is loaded by those who make one
    from ..durable._plan import Approval, Plan, PlanPolicy
    from ..durable._record import Durable, PendingCall

DEFAULT_LAZY_THRESHOLD = 40
LOG = logging.getLogger("codeact")
RESERVED = frozenset({RUN_CODE, SEARCH_TOOLS, DESCRIBE})


class Mode(StrEnum):
    """How the tools are offered to a model."""

    NATIVE = "native"
    CODE = "code"
    BOTH = "both"

    @classmethod
    def _missing_(cls, value: object) -> Mode | None:
        """``Mode("Code")`` is ``code``; anything else names the choices."""
        if isinstance(value, str) and value.strip().lower() in cls._value2member_map_:
            return cls(value.strip().lower())
        choices = ", ".join(repr(mode.value) for mode in cls)
        raise ValueError(f"{value!r} is not a mode: choose {choices}")


def _agreed_limits(limits: Limits | None, executor: Executor | None) -> Limits:
    """The limits scripts run under, the same ones the model is told: an executor's own
    when only it has them, and a refusal when the runtime and its executor disagree."""
    own = getattr(executor, "limits", None)
    if limits is None:
        return own if isinstance(own, Limits) else Limits()
    if isinstance(own, Limits) and own != limits:
        differ = [
            f"{field.name} ({getattr(own, field.name)!r} in the executor, "
            f"{getattr(limits, field.name)!r} in the runtime)"
            for field in dataclasses.fields(Limits)
            if getattr(own, field.name) != getattr(limits, field.name)
        ]
        raise UsageError(
            f"the executor and the runtime disagree on {'; '.join(differ)}: give the "
            "executor the same Limits, or give them to only one of the two"
        )
    return limits


class Runtime:
    """A registry offered in a mode that can change from one request to the next.

    ``schemas(mode)`` is the advertisement; ``execute(call, mode=...)`` runs a call the
    advertisement allows (a name it did not advertise gets UNKNOWN_TOOL). Past
    ``lazy_threshold`` tools, code mode advertises names only (``lazy="names"``) or
    none (``lazy="none"``), and ``search_tools``/``describe`` become callable, from
    scripts and, in both mode, natively.
    """

    def __init__(
        self,
        registry: ToolRegistry | Iterable[Tool | Callable[..., Any]],
        *,
        mode: Mode | str | None = None,
        executor: Executor | None = None,
        limits: Limits | None = None,
        modules: frozenset[str] | None = None,
        session: str = "default",
        lazy_threshold: int = DEFAULT_LAZY_THRESHOLD,
        lazy: str = "names",
        durable: Durable | None = None,
        plans: PlanPolicy | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        from ..stdlib import DEFAULT_MODULES

        if lazy not in ("names", "none"):
            raise ValueError("lazy must be 'names' or 'none'")
        registry = registry_of(registry)
        self.registry = registry
        self.mode = Mode.BOTH if mode is None else Mode(mode)
        self.mode_chosen = mode is not None  # a bridge offers a chosen mode as it is
        self.limits = _agreed_limits(limits, executor)
        self.modules = frozenset(DEFAULT_MODULES if modules is None else modules)
        self.lazy_threshold = lazy_threshold
        self.lazy = lazy
        self._scope = registry.child()
        self._discovery: list[Tool] = []  # made when the catalog first grows past the threshold
        self._discovery_disposers: list[Any] = []
        self.durable = durable
        if plans is not None and durable is None:
            raise UsageError("a plan policy needs a durable runtime: give it durable=Durable(...)")
        self.plans = plans
        if executor is None:
            from ..executors._process import ProcessExecutor  # loaded only by those who run workers
        elif environ is not None:
            raise UsageError("give environ to the executor you made: the runtime makes none")

        self.executor: Executor = executor or ProcessExecutor(
            limits=self.limits,
            modules=self.modules,
            hash_seed=None if durable is None else durable.hash_seed,
            environ=environ,
        )
        seed = getattr(self.executor, "hash_seed", durable.hash_seed if durable else None)
        if durable is not None and seed != durable.hash_seed:
            raise UsageError(
                "a durable runtime's workers need the hash seed its runs record: give the "
                f"executor hash_seed={durable.hash_seed}, or let the runtime make it"
            )
        self._session = session
        self._run_code = run_code_tool(
            self._scope,
            executor=self.executor,
            session=session,
            limits=self.limits,
            modules=self.modules,
            durable=durable,
            plans=plans,
        )
        self._scope.register(self._run_code)
        self._loop: BackgroundLoop | None = None
        self._advertised: dict[tuple[Mode, int, str], tuple[int, tuple[str, ...]]] = {}
        self._finalizer: Any = None
        self._entered: Any = None
        self._closed = False  # closed by close, aclose or leaving with: nothing runs after

    # Advertisement ---------------------------------------------------------------------

    def user_tools(self) -> list[Tool]:
        return [t for t in self.registry.tools() if t.name not in RESERVED]

    @property
    def is_lazy(self) -> bool:
        return len(self.user_tools()) > self.lazy_threshold

    def advertised(self, mode: Mode | str | None = None) -> list[str]:
        """The names a model may call in ``mode``."""
        mode = Mode(mode or self.mode)
        key = (mode, self.lazy_threshold, self.lazy)
        cached = self._advertised.get(key)
        if cached is not None and cached[0] == self._scope.version:  # every call asks
            return list(cached[1])
        names = self._advertise(mode)
        self._advertised[key] = (self._scope.version, tuple(names))
        return names

    def _advertise(self, mode: Mode) -> list[str]:
        self._sync_discovery()
        names = []
        if mode in (Mode.NATIVE, Mode.BOTH):
            names += [t.name for t in self.user_tools()]
        if mode in (Mode.CODE, Mode.BOTH):
            names.append(RUN_CODE)
        if mode is Mode.BOTH and self.is_lazy:
            names += [SEARCH_TOOLS, DESCRIBE]
        return names

    def schemas(self, mode: Mode | str | None = None) -> list[dict[str, JsonValue]]:
        """The advertisement for ``mode``: exactly ``{name, description, parameters}`` each."""
        mode = Mode(mode or self.mode)
        names = self.advertised(mode)
        out = []
        for name in names:
            if name == RUN_CODE:
                out.append(self._run_code_schema())
            else:
                found = self._scope.get(name)
                assert found is not None
                out.append(advertise(found))
        return out

    def tool(self, name: str) -> Tool | None:
        """The tool ``name`` resolves to here (run_code and discovery tools included)."""
        return self._scope.get(name)

    def _run_code_schema(self) -> dict[str, JsonValue]:
        schema = advertise(self._run_code)
        schema["description"] = describe_run_code(
            self._scope,
            modules=self.modules,
            limits=self.limits,
            lazy=self.lazy if self.is_lazy else None,
        )
        return schema

    def _sync_discovery(self) -> None:
        """Bind search_tools and describe exactly while the catalog is past the threshold."""
        if self.is_lazy and not self._discovery_disposers:
            if not self._discovery:
                self._discovery = discovery_tools(self.user_tools)
            self._discovery_disposers = [self._scope.register(t) for t in self._discovery]
            LOG.info(
                "code mode switched to lazy discovery: %d tools are past lazy_threshold=%d, "
                "so run_code lists %s and scripts find the rest with search_tools and describe",
                len(self.user_tools()),
                self.lazy_threshold,
                "their names only" if self.lazy == "names" else "none of them",
            )
        elif not self.is_lazy and self._discovery_disposers:
            for dispose in self._discovery_disposers:
                dispose()
            self._discovery_disposers = []
            LOG.info("code mode lists every tool's stub again (%d tools)", len(self.user_tools()))

    # Dispatch ----------------------------------------------------------------------------

    async def execute(
        self,
        call: ToolCall,
        *,
        mode: Mode | str | None = None,
        abort: AbortSignal | None = None,
        session: str | None = None,
    ) -> ToolExecutionResult:
        """Run a call the advertisement for ``mode`` allows; anything else is UNKNOWN_TOOL.

        ``session`` names the script session a ``run_code`` call runs in (its names
        persist there, apart from every other session's). Without one, the call runs in
        the runtime's own session, which every caller that names none shares (their
        scripts see each other's names and wait on each other): give each conversation
        or client a session of its own, as ``Agent`` and ``serve-mcp`` do.
        """
        self._check_open()
        allowed = self.advertised(mode)
        if call.name not in allowed:
            listed = ", ".join(allowed)
            where = Mode(mode or self.mode)
            message = f"unknown tool {call.name!r} in {where} mode. Available tools: {listed}"
            return failure(call.id, call.name, "UNKNOWN_TOOL", message)
        token = SCRIPT_SESSION.set(session) if session is not None else None
        try:
            return await self._scope.execute(call, abort=abort)
        finally:
            if token is not None:
                SCRIPT_SESSION.reset(token)

    # Durable runs -------------------------------------------------------------------------

    def pending(self, session: str | None = None) -> list[PendingCall]:
        """The calls ``session``'s unfinished run waits on (empty: none waits): deferred
        ones, and those a crash left with an unknown effect. A read-only or idempotent call
        a crash cut short is not among them: the resume makes it again."""
        from ..code_mode._run_code import script_tools
        from ..durable._run import repeatable_in

        named = script_tools(self.registry)  # the record names tools as scripts call them
        check = repeatable_in(self.registry)
        return self._durable().pending(
            session or self._session, lambda called: check(named.tool_name(called))
        )

    async def resume(
        self,
        session: str | None = None,
        decisions: Mapping[str, bool] | None = None,
        *,
        source: str | None = None,
        abort: AbortSignal | None = None,
    ) -> ToolExecutionResult:
        """Go on with ``session``'s last run (suspended, or cut short by a crash); a run
        that had ended gives the result it ended with (its host may have died first).

        ``decisions`` approve (True) or deny (False) pending calls by id (``pending()``).
        The run is replayed from its log in a clean worker, nothing recorded executes
        again, and it continues live from where it stopped: its result is what run_code
        returns. It may suspend again. A replay that meets a call other than its record's
        raises ``ReplayDiverged`` naming that call, having executed nothing. ``source``
        amends the script: it must make the recorded calls, in order, up to where the run
        stopped, and is recorded as the run's source from then on.
        """
        from ..durable._record import ReplayDiverged

        result = await self._resumed(session or self._session, decisions, source, abort)
        if result.is_error and result.error.code == ErrorCode.REPLAY_DIVERGED:
            raise ReplayDiverged(result.error.message)
        if result.is_error and result.error.code == ErrorCode.INVALID_ARGUMENTS:
            raise UsageError(result.error.message)
        return result

    async def _resumed(
        self,
        name: str,
        decisions: Mapping[str, bool] | None,
        source: str | None,
        abort: AbortSignal | None,
        plan_digest: str | None = None,
    ) -> ToolExecutionResult:
        """The resumed run's run_code result, as it is."""
        self._check_open()
        from ..durable._run import RESUMING, Resume

        runs = self._durable().runs(name)
        if not runs:
            raise UsageError(f"session {name!r} has no run to resume")
        run = runs[-1]
        code = run.started.source if source is None else source
        call = ToolCall(run.run, RUN_CODE, {"code": code})
        session_token = SCRIPT_SESSION.set(name)
        resume = Resume(decisions=dict(decisions or {}), plan_digest=plan_digest)
        resume_token = RESUMING.set(resume)
        try:
            result = await self._scope.execute(call, abort=abort)
        finally:
            RESUMING.reset(resume_token)
            SCRIPT_SESSION.reset(session_token)
        return result

    # Preview and commit ------------------------------------------------------------------

    async def preview(
        self, source: str, *, session: str | None = None, abort: AbortSignal | None = None
    ) -> Plan:
        """Run ``source`` with its reads made and its writes planned, not made; the plan it
        leaves waits for ``commit``. A script that writes nothing simply ran: its plan has
        no writes and holds what it returned."""
        from ..durable._commit import PREVIEW_ONLY
        from ..durable._plan import Plan

        self._check_open()
        name = session or self._session
        begun = len(self._durable().runs(name))
        call = ToolCall("preview", RUN_CODE, {"code": source, "preview": True})
        session_token = SCRIPT_SESSION.set(name)
        only_token = PREVIEW_ONLY.set(True)
        try:
            result = await self._scope.execute(call, abort=abort)
        finally:
            PREVIEW_ONLY.reset(only_token)
            SCRIPT_SESSION.reset(session_token)
        runs = self._durable().runs(name)
        plan = self.plan(name) if len(runs) > begun else None  # this preview's, no older one
        if plan is not None:
            return plan
        if result.is_error:
            raise ToolError(result.error.message, result.error.code)
        value = result.value.get("result") if isinstance(result.value, Mapping) else None
        return Plan(session=name, run=runs[-1].run if runs else "", writes=(), value=thaw(value))

    def plan(self, session: str | None = None) -> Plan | None:
        """The plan ``session``'s previewed run waits on (None: no plan waits)."""
        from ..durable._preview import plan_of

        name = session or self._session
        runs = self._durable().runs(name)
        if not runs or runs[-1].ended is not None:
            return None
        plan = plan_of(runs[-1], name)
        return plan if plan.writes else None

    async def commit(
        self,
        session: str | None = None,
        approval: Approval = True,
        *,
        digest: str | None = None,
        abort: AbortSignal | None = None,
    ) -> ToolExecutionResult:
        """Decide ``session``'s waiting plan and make what it approves: ``True`` every write,
        ``False`` none (the run ends with nothing made), or a mapping by write id or tool
        name. ``digest`` (``Plan.digest`` of the plan a person saw) binds the decision to
        that plan: if the record holds another, nothing is made and the plan still waits
        (SUSPENDED). The plan's reads run again first: if one answers otherwise than in the
        preview, nothing is made (REPLAY_DIVERGED). The result is run_code's; a commit
        whose script goes on to write more waits again, on its next plan (SUSPENDED)."""
        from ..durable._commit import checked, decline_plan

        name = session or self._session
        plan = self.plan(name)
        if plan is None:
            raise UsageError(f"session {name!r} has no plan waiting for a decision")
        if digest is not None and digest != plan.digest:
            return failure(
                plan.run,
                RUN_CODE,
                ErrorCode.SUSPENDED,
                f"the plan waiting in session {name!r} is not the one decided ({digest[:19]}; "
                f"it is {plan.digest[:19]}): nothing was made, and it still waits",
            )
        plan = checked(plan, self.plans)
        if plan.violations or approval is False:
            text = await decline_plan(self._durable(), name, plan)
            return failure(plan.run, RUN_CODE, ErrorCode.POLICY_DENIED, text)
        decisions = plan.decisions(approval, self.plans)
        return await self._resumed(name, decisions, None, abort, plan.digest)

    def preview_sync(self, source: str, *, session: str | None = None) -> Plan:
        """``preview`` from synchronous code."""
        return self._blocking().call(lambda: self.preview(source, session=session))

    def commit_sync(
        self, session: str | None = None, approval: Approval = True, *, digest: str | None = None
    ) -> ToolExecutionResult:
        """``commit`` from synchronous code."""
        return self._blocking().call(lambda: self.commit(session, approval, digest=digest))

    def resume_sync(
        self, session: str | None = None, decisions: Mapping[str, bool] | None = None
    ) -> ToolExecutionResult:
        """``resume`` from synchronous code."""
        return self._blocking().call(lambda: self.resume(session, decisions))

    def _durable(self) -> Durable:
        if self.durable is None:
            raise UsageError("this runtime records no runs: give it durable=Durable(...)")
        return self.durable

    async def close_session(self, session: str) -> None:
        """Forget a script session: its names, and its worker process if it has one (a
        durable session's record stays in its store, to resume or continue later)."""
        await self.executor.close_session(session)
        if self.durable is not None:
            self.durable.forget(session)

    async def execute_many(
        self,
        calls: Sequence[ToolCall],
        *,
        mode: Mode | str | None = None,
        abort: AbortSignal | None = None,
        session: str | None = None,
    ) -> list[ToolExecutionResult]:
        """Run calls as one turn's (read-only ones at once); ``session`` as in ``execute``."""
        self._check_open()
        allowed = set(self.advertised(mode))
        known = [c for c in calls if c.name in allowed]
        token = SCRIPT_SESSION.set(session) if session is not None else None
        try:
            ran = iter(await self._scope.execute_many(known, abort=abort))
        finally:
            if token is not None:
                SCRIPT_SESSION.reset(token)
        return [next(ran) if c.name in allowed else await self.execute(c, mode=mode) for c in calls]

    def _check_open(self) -> None:
        if self._closed:
            raise UsageError("this Runtime is closed: make a new one to run more calls")

    async def aclose(self) -> None:
        """Close the executor (its worker processes): async users call this."""
        self._closed = True
        try:
            await self.executor.aclose()
        finally:
            self._close_durable()

    def _close_durable(self) -> None:
        if self.durable is not None:
            self.durable.close()

    # Lifetimes: ``async with`` and ``with`` start the warm pool and the idle reaper -----

    async def __aenter__(self) -> Runtime:
        enter = getattr(self.executor, "__aenter__", None)
        if enter is not None:
            await enter()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._closed = True
        leave = getattr(self.executor, "__aexit__", None)
        if leave is not None:
            try:
                await leave(None, None, None)
            finally:
                self._close_durable()
        else:
            await self.aclose()

    def __enter__(self) -> Runtime:
        loop = self._blocking()
        if hasattr(self.executor, "__aenter__"):
            self._entered = loop.portal.wrap_async_context_manager(self.executor)  # type: ignore[arg-type]
            self._entered.__enter__()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # Sync twins for notebooks and scripts: one background event loop per runtime --------

    def _blocking(self) -> BackgroundLoop:
        if self._loop is None:
            self._loop = BackgroundLoop()
            self._finalizer = close_at_exit(self, _Shutdown(self._loop, self.executor))
        return self._loop

    def execute_sync(
        self, call: ToolCall, *, mode: Mode | str | None = None, session: str | None = None
    ) -> ToolExecutionResult:
        """``execute`` from synchronous code (works inside a running notebook loop too)."""
        return self._blocking().call(lambda: self.execute(call, mode=mode, session=session))

    def execute_many_sync(
        self,
        calls: Sequence[ToolCall],
        *,
        mode: Mode | str | None = None,
        session: str | None = None,
    ) -> list[ToolExecutionResult]:
        """``execute_many`` from synchronous code."""
        return self._blocking().call(lambda: self.execute_many(calls, mode=mode, session=session))

    def close(self) -> None:
        """Close what the sync twins started: the executor and their event loop.

        Optional: a runtime nobody closes is closed when it is collected or when the
        program exits, whichever comes first.
        """
        self._closed = True
        entered, self._entered = self._entered, None
        if entered is not None:  # leaves the executor's context: reaper stopped, pool closed
            entered.__exit__(None, None, None)
        if self._finalizer is not None:
            self._finalizer()
        self._loop = self._finalizer = None
        self._close_durable()


def registry_of(tools: ToolRegistry | Iterable[Tool | Callable[..., Any]]) -> ToolRegistry:
    """A registry for what the user has: itself, or a list of tools or plain functions."""
    if isinstance(tools, ToolRegistry):
        return tools
    if isinstance(tools, Tool) or callable(tools) or isinstance(tools, str | bytes | Mapping):
        raise UsageError(
            "Runtime takes a ToolRegistry or a list of tools or functions: "
            "Runtime([price]) rather than Runtime(price)"
        )
    registry = ToolRegistry()
    for item in tools:
        registry.register(item)
    return registry


class _Shutdown:
    """What closing a sync runtime does; holds no reference to the runtime itself."""

    def __init__(self, loop: BackgroundLoop, executor: Executor) -> None:
        self._loop = loop
        self._executor = executor

    def __call__(self) -> None:
        if self._loop.in_its_thread:
            # the runtime was collected on its own loop (a framework dropped it inside a
            # callback): closing waits on that loop, so another thread does it
            threading.Thread(target=self._close, name="codeact-close", daemon=True).start()
            return
        self._close()

    def _close(self) -> None:
        try:
            if self._loop.running:
                self._loop.call(self._executor.aclose)
        finally:
            self._loop.stop()


__all__ = ["DEFAULT_LAZY_THRESHOLD", "RESERVED", "Mode", "Runtime", "registry_of"]
