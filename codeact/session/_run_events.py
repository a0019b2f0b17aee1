"""What a durable run records: enough to re-run its script and reach the same state.

A script is deterministic given what reached it from outside, so the record holds
exactly that: the source, the hash seed its worker ran with, each tool call it made (by
position, written before the call's effect starts) and the answer it got, what the
nondeterministic facades returned (``reads``), and the decisions people made. These are
events of the session log, so every store keeps them as it keeps the rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, kw_only=True, slots=True)
class RunStarted:
    """A script run began: ``run`` is its run_code call id. Recorded again for a run
    already begun, it revises the source (a resume with an amended script)."""

    seq: int = 0
    run: str
    source: str
    hash_seed: int | None = None
    preview: bool = False  # its writes are planned, not made, until a plan is approved
    kind: Literal["run_started"] = "run_started"


@dataclass(frozen=True, kw_only=True, slots=True)
class ScriptCallStarted:
    """A script asked for a call, recorded before anything of it ran. ``reads`` are the
    facade readings (JSON) the script made since its previous message."""

    seq: int = 0
    run: str
    position: int
    name: str
    arguments: str
    reads: str = "[]"
    line: int | None = None  # the script line that made it
    kind: Literal["script_call_started"] = "script_call_started"


@dataclass(frozen=True, kw_only=True, slots=True)
class ScriptCallAnswered:
    """What the script received for the call at ``position`` (JSON, as the worker gets it)."""

    seq: int = 0
    run: str
    position: int
    answer: str
    kind: Literal["script_call_answered"] = "script_call_answered"


@dataclass(frozen=True, kw_only=True, slots=True)
class RunSuspended:
    """The run stopped at ``position`` until someone decides about that call."""

    seq: int = 0
    run: str
    position: int
    reason: str
    kind: Literal["run_suspended"] = "run_suspended"


@dataclass(frozen=True, kw_only=True, slots=True)
class RunDecided:
    """Someone decided about the pending call at ``position``; recorded again with
    ``attempted`` as the approved call starts, so a crash before its answer leaves its
    effect unknown (a question), never a silent second attempt."""

    seq: int = 0
    run: str
    position: int
    approved: bool
    attempted: bool = False
    kind: Literal["run_decided"] = "run_decided"


@dataclass(frozen=True, kw_only=True, slots=True)
class RunEnded:
    """The run finished (``code`` None on success); ``reads`` after its last call;
    ``outcome`` (JSON) is what it returned and printed, which a replay must reproduce and
    a resume after the end returns."""

    seq: int = 0
    run: str
    code: str | None = None
    reads: str = "[]"
    outcome: str = "{}"
    kind: Literal["run_ended"] = "run_ended"


@dataclass(frozen=True, kw_only=True, slots=True)
class RunPreviewed:
    """A preview (or the part of a commit past its plan) ended with writes planned:
    ``stop`` (JSON, empty when the script finished) says where it stopped and why;
    ``outcome`` (JSON) is what it returned and printed."""

    seq: int = 0
    run: str
    stop: str = ""
    outcome: str = "{}"
    kind: Literal["run_previewed"] = "run_previewed"


RunEvent = (
    RunStarted
    | ScriptCallStarted
    | ScriptCallAnswered
    | RunSuspended
    | RunDecided
    | RunPreviewed
    | RunEnded
)
RUN_EVENT_TYPES: dict[str, type[RunEvent]] = {
    "run_started": RunStarted,
    "script_call_started": ScriptCallStarted,
    "script_call_answered": ScriptCallAnswered,
    "run_suspended": RunSuspended,
    "run_decided": RunDecided,
    "run_previewed": RunPreviewed,
    "run_ended": RunEnded,
}

__all__ = [
    "RUN_EVENT_TYPES",
    "RunDecided",
    "RunEnded",
    "RunEvent",
    "RunPreviewed",
    "RunStarted",
    "RunSuspended",
    "ScriptCallAnswered",
    "ScriptCallStarted",
]
