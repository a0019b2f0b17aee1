"""Approvals through the protocol: a durable run that waits on a call becomes a question
the MCP client puts to its user, and the answer resumes the run from its record.

Under 2026-07-28 the question travels in an ``InputRequiredResult``: one form elicitation
per waiting call, keyed by the call's id, and a ``request_state`` naming the session, the
run and the calls asked about. The SDK's request-state boundary seals that state (AES-GCM
under a key this process holds, bound to the tool and its arguments, expiring), so a client
cannot forge it; each state also carries a one-time nonce, so an answer is accepted once.
A client of the handshake era is asked mid-call instead (``elicitation/create``). A client
that cannot be asked at all gets the run's "awaits approval" result: nothing it waits on
runs.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..contract._json import dumps
from ..durable._record import EFFECT_UNKNOWN, PendingCall
from ._sessions import Placement

APPROVE = "approve"
APPROVE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        APPROVE: {
            "type": "boolean",
            "title": "Approve this call",
            "description": "true runs the call; false tells the script it was declined",
        }
    },
    "required": [APPROVE],
}
STATE_SECONDS = 600.0  # the SDK boundary's default lifetime of a sealed state
MAX_SPENT = 100_000  # nonces remembered at once (each for STATE_SECONDS)
CANNOT_ASK = (
    "This MCP client cannot be asked (it declared no elicitation capability), so the call "
    "did not run and nothing after it ran. Approve it from a client that supports "
    "elicitation, or have the server's operator resume the run."
)


@dataclass(frozen=True, kw_only=True, slots=True)
class AskedState:
    """What a question's ``request_state`` says: whose run, which calls, which nonce."""

    session: str
    handle: str | None
    run: str
    asked: tuple[str, ...]
    nonce: str

    def text(self) -> str:
        return json.dumps(
            {
                "session": self.session,
                "handle": self.handle,
                "run": self.run,
                "asked": self.asked,
                "nonce": self.nonce,
            }
        )

    @classmethod
    def parse(cls, text: str) -> AskedState:
        """The state a retry carries (already unsealed and verified by the SDK boundary)."""
        try:
            plain = json.loads(text)
            handle = plain["handle"]
            state = cls(
                session=str(plain["session"]),
                handle=None if handle is None else str(handle),
                run=str(plain["run"]),
                asked=tuple(str(call) for call in plain["asked"]),
                nonce=str(plain["nonce"]),
            )
        except (ValueError, KeyError, TypeError):
            raise refused("the requestState is not one this server made") from None
        return state


def refused(reason: str) -> MCPError:
    return MCPError(code=types.INVALID_PARAMS, message=f"Invalid requestState: {reason}")


class Approvals:
    """The questions this server has asked: their one-time nonces, spent on first answer."""

    def __init__(self) -> None:
        self._spent: dict[str, float] = {}

    def state(self, placement: Placement, pending: Sequence[PendingCall]) -> AskedState:
        return AskedState(
            session=placement.session,
            handle=placement.handle,
            run=pending[0].run,
            asked=tuple(call.call_id for call in pending),
            nonce=secrets.token_urlsafe(16),
        )

    def spend(self, state: AskedState) -> None:
        """Accept an answer once: a state seen before is a replay."""
        now = time.monotonic()
        if len(self._spent) >= MAX_SPENT:
            self._spent = {n: t for n, t in self._spent.items() if now - t < STATE_SECONDS}
        if state.nonce in self._spent:
            raise refused("this question was already answered; its run went on from that answer")
        self._spent[state.nonce] = now


def question(call: PendingCall) -> str:
    """What the person is asked: the tool, its whole arguments, and why it waits."""
    why = f"\n{call.reason[0].upper()}{call.reason[1:]}." if call.reason == EFFECT_UNKNOWN else ""
    return (
        f"A script wants to call {call.name} with these arguments:\n"
        f"{dumps(call.arguments)}{why}\nApprove this call?"
    )


def elicitations(pending: Sequence[PendingCall]) -> dict[str, types.InputRequest]:
    return {
        call.call_id: types.ElicitRequest(
            params=types.ElicitRequestFormParams(
                message=question(call), requested_schema=APPROVE_SCHEMA
            )
        )
        for call in pending
    }


def decisions(asked: Sequence[str], answers: Mapping[str, Any]) -> dict[str, bool]:
    """Each asked call the answers decide: approved only on an accepted form saying so;
    declined, dismissed or malformed answers decline. Calls not answered stay pending."""
    decided: dict[str, bool] = {}
    for call_id in asked:
        if call_id in answers:
            decided[call_id] = approved(answers[call_id])
    return decided


def approved(answer: Any) -> bool:
    if isinstance(answer, types.ElicitResult):
        answer = answer.model_dump(mode="json")
    if not isinstance(answer, Mapping):
        return False
    content = answer.get("content")
    return (
        answer.get("action") == "accept"
        and isinstance(content, Mapping)
        and content.get(APPROVE) is True
    )


def how_to_ask(context: Any) -> str | None:
    """ "input_required" (2026-07-28), "request" (handshake era, mid-call), or None: this
    client cannot be asked."""
    session = getattr(context, "session", None)
    capabilities = getattr(session, "client_capabilities", None)
    if capabilities is None or capabilities.elicitation is None:
        return None
    if getattr(context, "protocol_version", None) in MODERN_PROTOCOL_VERSIONS:
        return "input_required"
    return "request" if getattr(session, "can_send_request", False) else None


__all__ = [
    "APPROVE_SCHEMA",
    "CANNOT_ASK",
    "Approvals",
    "AskedState",
    "decisions",
    "elicitations",
    "how_to_ask",
    "question",
]
