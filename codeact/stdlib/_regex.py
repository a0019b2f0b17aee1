"""``re`` for scripts, on an engine a time limit can stop.

CPython's ``re`` backtracks in C without ever returning to bytecode: ``(a|aa)+$``
against sixty ``a`` and a ``b`` holds the interpreter for hours, and in a host process
no watchdog can stop it. The ``regex`` engine takes a timeout, checked while it
matches; in its default version it keeps ``re``'s syntax and results. Scripts hold
``Pattern`` and ``Match`` objects written here around the engine's, with ``re``'s
public surface, flag values and reprs (``re.compile('\\d+')``, ``<re.Match object;
span=(0, 2), match='42'>``), nothing of the engine's own.

Like ``re``, the engine caches patterns and replacement templates for the whole
process: every string and flag it is given is an exact builtin, never a script's
subclass (which would outlive its session there).
"""

from __future__ import annotations

import fnmatch
import re
import sys
import types
from collections.abc import Iterator
from typing import Any, cast

import regex

from ..sandbox._builtins import clinic_arguments, no_keywords
from ..sandbox._errors import LimitExceeded
from ..sandbox._guards import Guards, OpaqueType
from ..sandbox._ownership import SHOWN, exact_value, register_readable
from ..sandbox._work_bounds import exact_len, interruptible

# What scripts read on patterns and matches: re's public surface.
MATCHING = ("match", "search", "fullmatch", "findall", "finditer", "split", "sub", "subn")
PATTERN_NAMES = (*MATCHING, "flags", "groupindex", "groups", "pattern")
MATCH_NAMES = (
    *("expand", "group", "groupdict", "groups", "span", "start", "end", "pos", "endpos"),
    *("lastindex", "lastgroup", "re", "string", "regs"),
)
# re's flags, by re's values (the engine's differ for ASCII only), in the order re's
# reprs name them.
RE_FLAGS = {
    "IGNORECASE": 2,
    "LOCALE": 4,
    "MULTILINE": 8,
    "DOTALL": 16,
    "UNICODE": 32,
    "VERBOSE": 64,
    "ASCII": 256,
}
SHORT_NAMES = {"I": "IGNORECASE", "L": "LOCALE", "M": "MULTILINE", "S": "DOTALL"}
SHORT_NAMES |= {"U": "UNICODE", "X": "VERBOSE", "A": "ASCII"}
_ENGINE_ASCII = int(regex.A)
_KNOWN = sum(RE_FLAGS.values())


def _engine_flags(flags: Any) -> int:
    """re's flag bits as the engine takes them: any other bit is dropped (the engine gives
    its own meanings to bits re leaves unused)."""
    if not isinstance(flags, int):
        raise TypeError(f"flags must be an integer, not {type(flags).__name__}")
    bits = int.__index__(flags) & _KNOWN
    return bits & ~RE_FLAGS["ASCII"] | (_ENGINE_ASCII if bits & RE_FLAGS["ASCII"] else 0)


def _re_flags(engine: int, ascii_given: bool) -> int:
    """The engine's compiled flags as re's (its version bits dropped; ASCII, which it sets
    on every bytes pattern, only where re has it: given, or on a str pattern)."""
    kept = engine & (_KNOWN & ~RE_FLAGS["ASCII"])
    return kept | (RE_FLAGS["ASCII"] if engine & _ENGINE_ASCII and ascii_given else 0)


class Pattern:
    """``re.Pattern`` as scripts hold it: the engine's compiled pattern, every match it
    makes stopped at the run's time limit and every text it builds checked against the
    run's size limit."""

    __slots__ = ("_ascii", "_checked", "_compiled", "_guards", "_kept")
    # re.Pattern[str]: an alias of the stand-in
    __class_getitem__: Any = classmethod(types.GenericAlias)

    def __init__(
        self,
        compiled: Any,
        guards: Guards,
        flags: int,
        checked: Any = None,
        kept: dict[Any, Any] | None = None,
    ) -> None:
        self._compiled = compiled
        self._guards = guards
        self._ascii = isinstance(compiled.pattern, str) or bool(flags & RE_FLAGS["ASCII"])
        self._checked = checked  # CPython's own compiled form: what templates are read by
        self._kept = kept  # the session's checks passed (see _checked)

    @property
    def pattern(self) -> Any:
        return self._compiled.pattern

    @property
    def flags(self) -> int:
        return _re_flags(self._compiled.flags, self._ascii)

    @property
    def groups(self) -> int:
        return int(self._compiled.groups)

    @property
    def groupindex(self) -> dict[str, int]:
        return dict(self._compiled.groupindex)  # a copy: the compiled pattern is shared

    def match(self, *args: Any, **keywords: Any) -> Match | None:
        return self._found(self._timed("match", *_scanned("match", args, keywords)))

    def search(self, *args: Any, **keywords: Any) -> Match | None:
        return self._found(self._timed("search", *_scanned("search", args, keywords)))

    def fullmatch(self, *args: Any, **keywords: Any) -> Match | None:
        return self._found(self._timed("fullmatch", *_scanned("fullmatch", args, keywords)))

    def findall(self, *args: Any, **keywords: Any) -> list[Any]:
        found: list[Any] = self._timed("findall", *_scanned("findall", args, keywords))
        return found

    def finditer(self, *args: Any, **keywords: Any) -> Iterator[Match]:
        return map(self._made, self._timed("finditer", *_scanned("finditer", args, keywords)))

    def split(self, *args: Any, **keywords: Any) -> list[Any]:
        given = clinic_arguments("split", ("string", "maxsplit"), 1, args, keywords)
        string = _text(given["string"])
        maxsplit = exact_value(given.get("maxsplit", 0))
        found: list[Any] = self._timed("split", string, maxsplit=maxsplit)
        return found

    def sub(self, *args: Any, **keywords: Any) -> Any:
        return self._substituted("sub", args, keywords)

    def subn(self, *args: Any, **keywords: Any) -> Any:
        return self._substituted("subn", args, keywords)

    def _substituted(self, name: str, args: tuple[Any, ...], keywords: dict[str, Any]) -> Any:
        given = clinic_arguments(name, ("repl", "string", "count"), 2, args, keywords)
        string = _text(given["string"])
        replacement = self._replacement(given["repl"], string)
        return self._timed(name, replacement, string, count=exact_value(given.get("count", 0)))

    def _timed(self, name: str, *args: Any, **kwargs: Any) -> Any:
        method = getattr(self._compiled, name)
        arguments = [exact_value(a) for a in args]
        try:
            return method(*arguments, timeout=self._guards.limits.wall_seconds, **kwargs)
        except TimeoutError:
            raise LimitExceeded(
                "wall time", "the regular expression ran past the script's time limit"
            ) from None
        except regex.error as error:  # what CPython's checks let through: re's error still
            raise re.error(str(error)) from None

    def _found(self, found: Any) -> Match | None:
        return None if found is None else Match(found, self)

    def _made(self, found: Any) -> Match:
        return Match(found, self)

    def _replacement(self, repl: Any, text: Any) -> Any:
        """A substitution's replacement, checked for what it could make before the engine
        runs (a template), or as it makes it (a callable, called per match from C: it
        enters Python each time, and what it returns is counted against the limit)."""
        limit = self._guards.limits.max_sequence_items
        if callable(repl):
            return _Counted(interruptible(repl), exact_len(text), limit, self)
        if self._checked is not None and self._kept is not None and type(repl) in (str, bytes):
            _check_template(repl, self._checked, self._kept)
        if isinstance(repl, str | bytes) and isinstance(text, str | bytes):
            worst = (exact_len(text) + 1) * max(exact_len(repl), 1) + exact_len(text)
            if worst > limit and exact_len(repl) > 1:
                raise LimitExceeded(
                    "sequence size", "the substitution could grow the text past its limit"
                )
        return exact_value(repl)

    def __eq__(self, other: object) -> bool:
        return type(other) is Pattern and self._compiled == other._compiled

    def __hash__(self) -> int:
        return hash(self._compiled)

    def __copy__(self) -> Pattern:
        return self

    def __deepcopy__(self, memo: Any) -> Pattern:
        return self

    def __repr__(self) -> str:
        flags = self.flags
        if isinstance(self.pattern, str) and flags & (4 | 32 | 256) == 32:
            flags &= ~32  # UNICODE is a str pattern's default: re leaves it unsaid
        named = [f"re.{name}" for name, bit in RE_FLAGS.items() if flags & bit]
        shown = repr(self.pattern)[:200]
        return f"re.compile({shown}, {'|'.join(named)})" if named else f"re.compile({shown})"


# CPython's reader of a replacement template (re's private parser, in 3.11 and after)
_PARSE_TEMPLATE = getattr(getattr(re, "_parser", None), "parse_template", None)


def _check_template(template: str | bytes, checked: re.Pattern[Any], kept: dict[Any, Any]) -> None:
    """A replacement template refused as CPython refuses it (``\\2`` past the groups, a
    group name the pattern lacks), before the engine reads it: its own errors differ. A
    template read once for a pattern is kept in the session's table, as re caches it."""
    escaped = b"\\" in template if isinstance(template, bytes) else "\\" in template
    if _PARSE_TEMPLATE is None or not escaped:
        return
    key = (checked, type(template), template)
    if key in kept:
        return
    _PARSE_TEMPLATE(template, checked)  # read only; a bad one raises re.error
    _keep(kept, key, True)


def _checked(pattern: Any, flags: Any, kept: dict[Any, Any]) -> re.Pattern[Any] | None:
    """``pattern`` compiled by CPython's ``re``, for its checks alone: a pattern CPython
    refuses is refused in its words (the engine takes more syntax, and words its errors its
    own way). Never matched with: compiling never backtracks. ``kept``: the session's
    patterns checked so far (never re's cache, which every session shares)."""
    if type(pattern) not in (str, bytes):  # a compiled pattern is the caller's to pass on
        raise TypeError("first argument must be string or compiled pattern")
    # re's flags alone (DEBUG would print the parse to the host's standard output)
    key = (type(pattern), pattern, int.__index__(flags) & _KNOWN)
    found = kept.get(key)
    if found is not None:
        return cast("re.Pattern[Any]", found)
    text = pattern if type(pattern) is str else pattern.decode("latin-1")
    if any(marks in text for marks in _FUTURE_SET_SYNTAX):
        return None  # CPython would warn (in the host's warnings, to the host's stderr)
    found = cast("re.Pattern[Any]", _COMPILE(pattern, key[2]))
    _keep(kept, key, found)
    return found


def _keep(kept: dict[Any, Any], key: Any, value: Any) -> None:
    """``kept[key] = value``, the oldest entry dropped past ``MAX_CHECKED_PATTERNS``."""
    if len(kept) >= MAX_CHECKED_PATTERNS:
        del kept[next(iter(kept))]
    kept[key] = value


# What CPython's parser warns of as future set syntax ("Possible nested set").
_FUTURE_SET_SYNTAX = ("[[", "--", "&&", "~~", "||")
# re's compiler without re's cache (3.11 and after), else re.compile
_COMPILE: Any = getattr(getattr(re, "_compiler", None), "compile", re.compile)
MAX_CHECKED_PATTERNS = 128


class _Counted:
    """A substitution's callable replacement: given ``Match`` objects, as re gives them,
    and what it returns counted against the run's size limit."""

    __slots__ = ("_call", "_limit", "_made", "_pattern")

    def __init__(self, call: Any, made: int, limit: int, pattern: Pattern) -> None:
        self._call, self._made, self._limit, self._pattern = call, made, limit, pattern

    def __call__(self, found: Any) -> Any:
        piece = self._call(Match(found, self._pattern))
        self._made += exact_len(piece) if isinstance(piece, str | bytes) else 0
        if self._made > self._limit:
            raise LimitExceeded("sequence size", "the substitution grew the text past its limit")
        return piece


class Match:
    """``re.Match`` as scripts hold it: the engine's match, read through re's surface."""

    __slots__ = ("_found", "_pattern")
    # re.Match[str]: an alias of the stand-in
    __class_getitem__: Any = classmethod(types.GenericAlias)

    def __init__(self, found: Any, pattern: Pattern) -> None:
        self._found = found
        self._pattern = pattern

    @property
    def re(self) -> Pattern:
        return self._pattern

    @property
    def string(self) -> Any:
        return self._found.string

    @property
    def pos(self) -> int:
        return int(self._found.pos)

    @property
    def endpos(self) -> int:
        return int(self._found.endpos)

    @property
    def lastindex(self) -> int | None:
        found: int | None = self._found.lastindex
        return found

    @property
    def lastgroup(self) -> str | None:
        found: str | None = self._found.lastgroup
        return found

    @property
    def regs(self) -> tuple[tuple[int, int], ...]:
        return tuple(self._found.regs)

    def group(self, *groups: Any, **keywords: Any) -> Any:
        no_keywords("Match.group", keywords)
        return self._found.group(*_group_keys(groups))

    def __getitem__(self, group: Any) -> Any:
        return self._found[_group_keys((group,))[0]]

    def groups(self, *args: Any, **keywords: Any) -> tuple[Any, ...]:
        default = clinic_arguments("groups", ("default",), 0, args, keywords).get("default")
        return tuple(self._found.groups(default))

    def groupdict(self, *args: Any, **keywords: Any) -> dict[str, Any]:
        default = clinic_arguments("groupdict", ("default",), 0, args, keywords).get("default")
        return dict(self._found.groupdict(default))

    def span(self, *group: Any, **keywords: Any) -> tuple[int, int]:
        start, end = self._found.span(*_group_keys(_one_group("span", group, keywords)))
        return int(start), int(end)

    def start(self, *group: Any, **keywords: Any) -> int:
        return int(self._found.start(*_group_keys(_one_group("start", group, keywords))))

    def end(self, *group: Any, **keywords: Any) -> int:
        return int(self._found.end(*_group_keys(_one_group("end", group, keywords))))

    def expand(self, template: Any) -> Any:
        """Each group reference in the template writes out up to the whole string: the
        template's references times the string's length is checked first."""
        if isinstance(template, str | bytes):
            # the base type's count: a script's subclass could answer for its own
            if isinstance(template, str):
                references = str.count(template, "\\")
            else:
                references = bytes.count(template, b"\\")
            worst = exact_len(template) + references * exact_len(self._found.string or "")
            if worst > self._pattern._guards.limits.max_sequence_items:
                raise LimitExceeded(
                    "sequence size", "the expanded template could grow past its limit"
                )
        return self._found.expand(exact_value(template))

    def __copy__(self) -> Match:
        return self

    def __deepcopy__(self, memo: Any) -> Match:
        return self

    def __repr__(self) -> str:
        start, end = self._found.span()
        return f"<re.Match object; span=({start}, {end}), match={repr(self._found.group())[:50]}>"


def _one_group(method: str, group: tuple[Any, ...], keywords: dict[str, Any]) -> tuple[Any, ...]:
    """``span``, ``start`` and ``end`` take one optional group, by position only (re's
    words for anything else)."""
    no_keywords(f"Match.{method}", keywords)
    if len(group) > 1:
        raise TypeError(f"{method} expected at most 1 argument, got {len(group)}")
    return group or (0,)


_SCANNING = ("string", "pos", "endpos")


def _scanned(method: str, args: tuple[Any, ...], keywords: dict[str, Any]) -> tuple[Any, ...]:
    """``match``, ``search``, ``fullmatch``, ``findall`` and ``finditer``: the text, and the
    span of it to scan."""
    given = clinic_arguments(method, _SCANNING, 1, args, keywords)
    return _text(given["string"]), given.get("pos", 0), given.get("endpos", sys.maxsize)


def _text(string: Any) -> Any:
    """The text a pattern reads: a string or bytes-like object (re's words for anything else)."""
    if not isinstance(string, str | bytes | bytearray | memoryview):
        raise TypeError(f"expected string or bytes-like object, got {type(string).__name__!r}")
    return string


def _group_keys(groups: tuple[Any, ...]) -> tuple[Any, ...]:
    """A group is named by an integer or a string, and anything else is no such group
    (re's IndexError, where the engine raises a TypeError)."""
    for group in groups:
        if isinstance(group, str | bytes) or hasattr(type(group), "__index__"):
            continue
        for unhashable in (list, dict, set, bytearray):  # looked up among the names
            if isinstance(group, unhashable):
                raise TypeError(f"unhashable type: '{unhashable.__name__}'")
        raise IndexError("no such group")
    return tuple(exact_value(group) for group in groups)


# What type() shows and what re.Pattern and re.Match are to scripts: isinstance answers,
# nothing to build with (re's classes cannot be called either).
PATTERN_TYPE = OpaqueType(Pattern, "Pattern", "re")
MATCH_TYPE = OpaqueType(Match, "Match", "re")
SHOWN[Pattern] = PATTERN_TYPE
SHOWN[Match] = MATCH_TYPE
register_readable(Pattern, names=PATTERN_NAMES)
register_readable(Match, names=MATCH_NAMES)


def re_members(guards: Guards) -> dict[str, Any]:
    """The ``re`` facade's members for one session."""
    # plain ints: a flag class called with a new value keeps it as a pseudo-member, in a
    # table of the process that grows with every value a script combines (re.I | n << 24)
    members: dict[str, Any] = dict(RE_FLAGS)
    members.update({short: RE_FLAGS[name] for short, name in SHORT_NAMES.items()})
    kept: dict[Any, Any] = {}  # the session's patterns CPython's checks passed

    def compile(pattern: Any, flags: Any = 0) -> Pattern:
        if type(pattern) is Pattern:
            if flags:
                raise ValueError("cannot process flags argument with a compiled pattern")
            return pattern
        engine = _engine_flags(flags)
        exact = exact_value(pattern)
        checked = _checked(exact, flags, kept)
        try:
            compiled = regex.compile(exact, engine)
        except regex.error as error:  # what CPython's checks let through: re's error still
            raise re.error(str(error)) from None
        return Pattern(compiled, guards, int(flags), checked, kept)

    def match(pattern: Any, string: Any, flags: Any = 0) -> Match | None:
        return compile(pattern, flags).match(string)

    def search(pattern: Any, string: Any, flags: Any = 0) -> Match | None:
        return compile(pattern, flags).search(string)

    def fullmatch(pattern: Any, string: Any, flags: Any = 0) -> Match | None:
        return compile(pattern, flags).fullmatch(string)

    def findall(pattern: Any, string: Any, flags: Any = 0) -> list[Any]:
        return compile(pattern, flags).findall(string)

    def finditer(pattern: Any, string: Any, flags: Any = 0) -> Iterator[Match]:
        return compile(pattern, flags).finditer(string)

    def split(pattern: Any, string: Any, maxsplit: int = 0, flags: Any = 0) -> list[Any]:
        return compile(pattern, flags).split(string, maxsplit)

    def sub(pattern: Any, repl: Any, string: Any, count: int = 0, flags: Any = 0) -> Any:
        return compile(pattern, flags).sub(repl, string, count)

    def subn(pattern: Any, repl: Any, string: Any, count: int = 0, flags: Any = 0) -> Any:
        return compile(pattern, flags).subn(repl, string, count)

    def escape(pattern: Any) -> Any:
        exact = exact_value(pattern)
        if type(exact) not in (str, bytes):  # CPython's words, without its code on the object
            raise TypeError(
                f"decoding to str: need a bytes-like object, {type(exact).__name__} found"
            )
        return re.escape(exact)  # CPython's (the engine escapes more)

    def purge() -> None:
        """The compiled patterns are cached by the engine for the whole process: none of
        them is the script's to drop, and nothing a script sees depends on them."""

    members.update(
        NOFLAG=0,
        error=re.error,
        Pattern=PATTERN_TYPE,
        Match=MATCH_TYPE,
        compile=compile,
        escape=escape,
        purge=purge,
        match=match,
        search=search,
        fullmatch=fullmatch,
        findall=findall,
        finditer=finditer,
        split=split,
        sub=sub,
        subn=subn,
    )
    return members


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

    def fnmatch_name(name: Any, pat: Any) -> bool:
        return fnmatchcase(name, pat)  # POSIX: a name's case is its own

    return {
        "fnmatch": fnmatch_name,
        "fnmatchcase": fnmatchcase,
        "filter": filter_names,
        "translate": translate,
    }


__all__ = ["fnmatch_members", "re_members"]
