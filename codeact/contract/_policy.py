"""Policy: may this call run? Allow, deny, or ask an approver.

Rules match by tool name (shell-style patterns) and, optionally, by a predicate on
the frozen arguments; the first rule that matches decides.
"""

from __future__ import annotations

import contextvars
import fnmatch
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Protocol

from ._invocation import Invocation
from ._json import FrozenJson


class Action(StrEnum):
    """What a rule does with a call it matches."""

    ALLOW = "allow"
    DENY = "deny"
    ASK = "ask"


@dataclass(frozen=True, kw_only=True, slots=True)
class Verdict:
    """A policy's answer; ``reason`` is shown to the model when the call is denied."""

    allowed: bool
    reason: str = ""
    # the approver cannot answer now: a durable run suspends here until someone decides
    later: bool = False


class Later:
    """What an approver returns to defer its decision (``LATER``)."""

    def __repr__(self) -> str:
        return "LATER"


LATER = Later()
# Decisions already made, by call id (a resumed run's): the approver is not asked again.
DECIDED: contextvars.ContextVar[Mapping[str, bool]] = contextvars.ContextVar(
    "codeact_decided", default=MappingProxyType({})
)


class Policy(Protocol):
    """Decides whether an invocation may run."""

    async def decide(self, invocation: Invocation) -> Verdict: ...


# A decision on a plan: all of it (True, False), or by write id or tool name.
Approval = bool | Mapping[str, bool]
# Asked about one call (an Invocation: True/False) or a previewed run's plan (a Plan:
# True/False for all of it, or a mapping by write id or tool name); LATER defers.
Approver = Callable[[Any], Awaitable[Approval | Later] | Approval | Later]
ArgumentPredicate = Callable[[Mapping[str, FrozenJson]], bool]


@dataclass(frozen=True, kw_only=True, slots=True)
class Rule:
    """``action`` for calls of tools matching ``tool`` whose arguments satisfy ``when``."""

    action: Action
    tool: str = "*"
    when: ArgumentPredicate | None = None
    reason: str = ""

    def matches(self, invocation: Invocation) -> bool:
        if not fnmatch.fnmatchcase(invocation.name, self.tool):
            return False
        if self.when is None:
            return True
        arguments = invocation.arguments
        return isinstance(arguments, Mapping) and bool(self.when(arguments))


def allow(tool: str = "*", *, when: ArgumentPredicate | None = None) -> Rule:
    """A rule that lets matching calls run."""
    return Rule(action=Action.ALLOW, tool=tool, when=when)


def deny(tool: str = "*", *, when: ArgumentPredicate | None = None, reason: str = "") -> Rule:
    """A rule that refuses matching calls, telling the model ``reason``."""
    return Rule(action=Action.DENY, tool=tool, when=when, reason=reason)


def ask(tool: str = "*", *, when: ArgumentPredicate | None = None) -> Rule:
    """A rule that asks the approver about matching calls."""
    return Rule(action=Action.ASK, tool=tool, when=when)


class RulePolicy:
    """First matching rule wins; ``default`` applies when none matches.

    ``ask`` needs an ``approver`` (sync or async); without one the call is denied,
    never silently allowed. An approver that cannot answer now returns ``LATER``: a
    durable run then suspends until ``resume`` brings the decision.
    """

    def __init__(
        self,
        rules: Sequence[Rule] = (),
        *,
        default: Action = Action.ALLOW,
        approver: Approver | None = None,
    ) -> None:
        self.rules = tuple(rules)
        self.default = default
        self.approver = approver
        # Verdicts by tool name, for names whose verdict no argument changes; kept while
        # the rules and the default are the ones they were read from.
        self._by_name: tuple[tuple[Rule, ...], Action, dict[str, Verdict | _Depends | None]] = (
            self.rules,
            default,
            {},
        )

    async def decide(self, invocation: Invocation) -> Verdict:
        verdict = self.decide_now(invocation)
        return verdict if verdict is not None else await self._ask(invocation)

    def decide_now(self, invocation: Invocation) -> Verdict | None:
        """The verdict when no approver is needed (None: the rule says ask)."""
        rules, default, by_name = self._by_name
        if rules is not self.rules or default is not self.default:  # the rules were replaced
            rules, default, by_name = self._by_name = (self.rules, self.default, {})
        name = invocation.name
        known = by_name.get(name, _UNSEEN)
        if known is _UNSEEN:
            known = self._by_name_only(name)
        if known is not _DEPENDS:
            return known  # type: ignore[return-value]
        rule = next((rule for rule in self.rules if rule.matches(invocation)), None)
        action = rule.action if rule else self.default
        if action is Action.ALLOW:
            return Verdict(allowed=True)
        if action is Action.DENY:
            reason = (
                rule.reason
                if rule and rule.reason
                else f"policy denies calls to {invocation.name!r}"
            )
            return Verdict(allowed=False, reason=reason)
        return None

    def _by_name_only(self, name: str) -> Verdict | _Depends | None:
        """The verdict every call of ``name`` gets, when the first rule naming it reads no
        arguments (or none names it); else _DEPENDS. Remembered for the next call."""
        rules, _, by_name = self._by_name
        rule = next((rule for rule in rules if fnmatch.fnmatchcase(name, rule.tool)), None)
        if rule is not None and rule.when is not None:
            known: Verdict | _Depends | None = _DEPENDS
        else:
            action = rule.action if rule else self.default
            if action is Action.ALLOW:
                known = _ALLOWED
            elif action is Action.DENY:
                reason = rule.reason if rule and rule.reason else f"policy denies calls to {name!r}"
                known = Verdict(allowed=False, reason=reason)
            else:
                known = None
        if len(by_name) < MAX_NAMES_KEPT:  # names are the registry's, but keep it bounded
            by_name[name] = known
        return known

    async def approve_plan(self, plan: object) -> Approval | Later:
        """The approver's decision on a whole plan (code mode's ``Plan``, handed to the
        approver as it is): one question for all its writes. With no approver, the plan
        waits (LATER) for ``Runtime.commit``."""
        if self.approver is None:
            return LATER
        answer = await self._answer(plan)
        if answer is LATER or isinstance(answer, bool | Mapping):
            return answer
        raise TypeError(
            f"a plan's approver returns True, False, a mapping or LATER, not {answer!r}"
        )

    async def _answer(self, question: object) -> Approval | Later:
        """The approver's answer, awaited when it is a coroutine."""
        assert self.approver is not None
        given = self.approver(question)
        return await given if inspect.isawaitable(given) else given

    async def _ask(self, invocation: Invocation) -> Verdict:
        decided = DECIDED.get().get(invocation.call_id)
        if decided is not None:
            answer: Approval | Later = decided
        elif self.approver is None:
            return Verdict(
                allowed=False, reason=f"{invocation.name!r} needs approval and no approver is set"
            )
        else:
            answer = await self._answer(invocation)
            if isinstance(answer, Mapping):  # a plan's kind of answer, to a single call
                raise TypeError("an approver asked about one call returns True, False or LATER")
        if answer is LATER:
            return Verdict(
                allowed=False,
                later=True,
                reason=f"the call to {invocation.name!r} waits for approval",
            )
        if answer:
            return Verdict(allowed=True)
        return Verdict(
            allowed=False, reason=f"the approver declined this call to {invocation.name!r}"
        )


class _Depends:
    """A tool whose verdict depends on its call's arguments."""


_DEPENDS = _Depends()
_UNSEEN = _Depends()  # a name not looked at yet
_ALLOWED = Verdict(allowed=True)
MAX_NAMES_KEPT = 4_096

ALLOW_ALL = RulePolicy()

__all__ = [
    "ALLOW_ALL",
    "DECIDED",
    "LATER",
    "Action",
    "Approver",
    "Later",
    "Policy",
    "Rule",
    "RulePolicy",
    "Verdict",
    "allow",
    "ask",
    "deny",
]
