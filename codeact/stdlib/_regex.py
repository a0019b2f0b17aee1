"""``re`` for scripts, on an engine a time limit can stop.

CPython's ``re`` backtracks in C without ever returning to bytecode: ``(a|aa)+$``
against sixty ``a`` and a ``b`` holds the interpreter for hours, and in a host process
no watchdog can stop it. The ``regex`` engine takes a timeout, checked while it
matches; in its default version it keeps ``re``'s syntax and results. Scripts see
``re``'s names and ``re``'s public surface, nothing more.

Like ``re``, the engine caches patterns and replacement templates for the whole
process: every string and flag it is given is an exact builtin, never a script's
subclass (which would outlive its session there).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from typing import Any

import regex

from ..sandbox._errors import LimitExceeded
from ..sandbox._guards import Guards
from ..sandbox._ownership import (
    exact_arguments,
    exact_value,
    register_host_method,
    register_readable,
)
from ..sandbox._work_bounds import exact_len, interruptible

# The engine's calls that match, each stopped at the run's time limit.
MATCHING = ("match", "search", "fullmatch", "findall", "finditer", "split", "sub", "subn")
# What scripts read on patterns and matches: re's public surface, not the engine's extras.
PATTERN_NAMES = (*MATCHING, "flags", "groupindex", "groups", "pattern")
MATCH_NAMES = [
    "expand",
    "group",
    "groupdict",
    "groups",
    "span",
    "start",
    "end",
    "pos",
    "endpos",
    "lastindex",
    "lastgroup",
    "re",
    "string",
    "regs",
]
FLAGS = "IGNORECASE I MULTILINE M DOTALL S VERBOSE X ASCII A UNICODE U"


def re_members(guards: Guards) -> dict[str, Any]:
    """The ``re`` facade's members for one session."""
    # plain ints: a flag class called with a new value keeps it as a pseudo-member, in a
    # table of the process that grows with every value a script combines (re.I | n << 24)
    members: dict[str, Any] = {name: int(getattr(regex, name)) for name in FLAGS.split()}
    members.update(
        {
            "NOFLAG": 0,
            "error": regex.error,
            "Pattern": regex.Pattern,
            "Match": regex.Match,
            "compile": exact_arguments(regex.compile),
            "escape": exact_arguments(regex.escape),
        }
    )
    for name in MATCHING:
        members[name] = _timed(exact_arguments(getattr(regex, name)), guards)

    timed_sub, timed_subn = members["sub"], members["subn"]

    def sub(pattern: Any, repl: Any, text: Any, count: int = 0, flags: int = 0) -> Any:
        repl = _sized_replacement(guards, repl, text)
        return timed_sub(pattern, repl, text, count=count, flags=flags)

    def subn(pattern: Any, repl: Any, text: Any, count: int = 0, flags: int = 0) -> Any:
        repl = _sized_replacement(guards, repl, text)
        return timed_subn(pattern, repl, text, count=count, flags=flags)

    members["sub"], members["subn"] = sub, subn
    return members


def _timed(function: Callable[..., Any], guards: Guards) -> Callable[..., Any]:
    """``function`` stopped by the engine at the run's time limit, as a limit."""

    def call(*args: Any, **kwargs: Any) -> Any:
        kwargs.pop("timeout", None)  # the limit is the run's, not the script's to raise
        try:
            return function(*args, timeout=guards.limits.wall_seconds, **kwargs)
        except TimeoutError:
            raise LimitExceeded(
                "wall time", "the regular expression ran past the script's time limit"
            ) from None

    return call


def _pattern_method(name: str) -> Callable[[Any, Guards], Any]:
    def wrap(method: Any, guards: Guards) -> Any:
        if name in ("sub", "subn"):
            inner = method

            def method(repl: Any, text: Any = "", *args: Any, **kwargs: Any) -> Any:
                return inner(_sized_replacement(guards, repl, text), text, *args, **kwargs)

        return _timed(exact_arguments(method), guards)

    return wrap


def _sized_replacement(guards: Guards, repl: Any, text: Any) -> Any:
    """A substitution's replacement, checked for what it could make before the engine runs
    (a template), or as it makes it (a callable, called per match from C: it enters Python
    each time, and what it returns is counted against the limit)."""
    limit = guards.limits.max_sequence_items
    if callable(repl):
        made = [exact_len(text)]
        call = interruptible(repl)

        def counted(match: Any) -> Any:
            piece = call(match)
            made[0] += exact_len(piece) if isinstance(piece, str | bytes) else 0
            if made[0] > limit:
                raise LimitExceeded(
                    "sequence size", "the substitution grew the text past its limit"
                )
            return piece

        return counted
    if isinstance(repl, str | bytes) and isinstance(text, str | bytes):
        worst = (exact_len(text) + 1) * max(exact_len(repl), 1) + exact_len(text)
        if worst > limit and exact_len(repl) > 1:
            raise LimitExceeded(
                "sequence size", "the substitution could grow the text past its limit"
            )
    return repl


def _sized_expand(method: Any, guards: Guards) -> Callable[[Any], Any]:
    """``Match.expand``: each group reference in the template writes out up to the whole
    string, so the template's references times the string's length is checked first."""

    def expand(template: Any) -> Any:
        if isinstance(template, str | bytes):
            if isinstance(template, str):
                references = template.count("\\")
            else:
                references = template.count(b"\\")
            subject = method.__self__.string
            worst = exact_len(template) + references * exact_len(subject or "")
            if worst > guards.limits.max_sequence_items:
                raise LimitExceeded(
                    "sequence size", "the expanded template could grow past its limit"
                )
        return method(exact_value(template))

    return expand


def _group_keys(method: Any, guards: Guards) -> Callable[..., Any]:
    """``Match.group``, ``span``, ``start``, ``end``: a group is named by an integer or a
    string, and anything else is no such group (``re``'s IndexError, where the engine
    raises a TypeError)."""

    def named_groups(*groups: Any) -> Any:
        for group in groups:
            if isinstance(group, str | bytes) or hasattr(type(group), "__index__"):
                continue
            for unhashable in (list, dict, set, bytearray):  # looked up among the names
                if isinstance(group, unhashable):
                    raise TypeError(f"unhashable type: '{unhashable.__name__}'")
            raise IndexError("no such group")
        return method(*groups)

    return named_groups


register_readable(regex.Pattern, names=PATTERN_NAMES)
register_readable(regex.Match, names=MATCH_NAMES)
for _name in MATCHING:
    register_host_method(regex.Pattern, _name, _pattern_method(_name))
register_host_method(regex.Match, "expand", _sized_expand)
for _name in ("group", "span", "start", "end"):
    register_host_method(regex.Match, _name, _group_keys)


def fnmatch_members(re_facade: Any) -> dict[str, Any]:
    """``fnmatch`` for one session: CPython's translation of a shell pattern, matched with
    the session's ``re`` (bounded in time; the real module caches compiled patterns for
    the process, in a table of its own)."""

    def fnmatchcase(name: Any, pat: Any) -> bool:
        if type(name) is not str or type(pat) is not str:
            raise TypeError("fnmatch takes a name and a pattern as strings in scripts")
        return re_facade.match(fnmatch.translate(pat), name) is not None

    def filter_names(names: Any, pat: Any) -> list[str]:
        return [name for name in names if fnmatchcase(name, pat)]

    def translate(pat: Any) -> str:
        if type(pat) is not str:
            raise TypeError("fnmatch.translate takes a pattern as a string in scripts")
        return fnmatch.translate(pat)

    # POSIX: a name's case is its own, so fnmatch is fnmatchcase
    return {
        "fnmatch": fnmatchcase,
        "fnmatchcase": fnmatchcase,
        "filter": filter_names,
        "translate": translate,
    }


__all__ = ["fnmatch_members", "re_members"]
