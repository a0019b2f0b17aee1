"""Preview, one decision, commit: how run_code runs a script whose writes need approval.

A previewed run plans its writes (``PlanReady``). The plan policy may refuse it outright;
otherwise the policy's approver is asked once, about the whole plan. ``LATER`` (or no
approver) leaves the plan waiting for ``Runtime.commit``; ``False`` ends the run with
nothing made; anything else is the commit: the run is resumed with a decision for
every write, its reads checked against the preview's first. Past the point where the
preview stopped, the commit plans again: its new writes are the next plan, asked about
in turn.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass, replace

from ..contract._exceptions import ErrorCode, ToolError, UsageError
from ..contract._policy import LATER, Later
from ..sandbox import ScriptOutcome
from ._plan import Plan, PlanPolicy
from ._record import Durable
from ._run import RESUMING, PlanReady, Resume, Surroundings, decline, run_durably

# Set by Runtime.preview: a plan is returned to the caller, the approver is not asked.
PREVIEW_ONLY: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "codeact_preview_only", default=False
)
WAITING = "The plan waits for a decision (Runtime.commit); none of its writes was made."
DECLINED = "The plan was declined: none of its writes was made."


@dataclass(frozen=True, kw_only=True, slots=True)
class Committed:
    """A previewed run that ended: its outcome, and the plans that were approved for it."""

    outcome: ScriptOutcome
    plans: tuple[str, ...]


async def run_with_plans(
    durable: Durable,
    session: str,
    source: str,
    run_id: str,
    around: Surroundings,
    plans: PlanPolicy | None,
    *,
    preview: bool,
) -> Committed:
    """Run (or resume) ``source`` durably; a plan it makes is decided as the module says."""
    ask = RESUMING.get() is None and not PREVIEW_ONLY.get()
    try:
        outcome = await run_durably(durable, session, source, run_id, around, preview=preview)
        return Committed(outcome=outcome, plans=())
    except PlanReady as ready:
        plan = ready.plan
    approved: list[str] = []
    while True:
        plan = checked(plan, plans)
        if plan.violations:
            raise ToolError(await decline_plan(durable, session, plan), ErrorCode.POLICY_DENIED)
        approve_plan = getattr(around.registry.policy, "approve_plan", None)
        answer = await approve_plan(plan) if ask and approve_plan is not None else LATER
        if isinstance(answer, Later):
            raise ToolError(f"{plan.text()}\n{WAITING}", ErrorCode.SUSPENDED)
        if answer is False:
            raise ToolError(await decline_plan(durable, session, plan), ErrorCode.POLICY_DENIED)
        try:
            decisions = plan.decisions(answer, plans)
        except UsageError as error:  # the approver's answer does not fit the plan
            raise ToolError(f"{plan.text()}\n{error}", ErrorCode.SUSPENDED) from None
        approved.append(f"{plan.text()}\n{_decided(plan, decisions)}")
        token = RESUMING.set(Resume(decisions=decisions, plan_digest=plan.digest))
        try:
            source = durable.runs(session)[-1].started.source
            outcome = await run_durably(durable, session, source, plan.run, around)
            return Committed(outcome=outcome, plans=tuple(approved))
        except PlanReady as ready:
            plan = ready.plan
        finally:
            RESUMING.reset(token)


def checked(plan: Plan, plans: PlanPolicy | None) -> Plan:
    """``plan`` with what the plan policy refuses in it (nothing, without one)."""
    return plan if plans is None else replace(plan, violations=plans.violations(plan))


async def decline_plan(durable: Durable, session: str, plan: Plan) -> str:
    """End the plan's run with none of its writes made (the policy refused it, or a person
    declined it); what the model reads."""
    why = f"the plan policy refused the plan: {plan.violations[0]}" if plan.violations else DECLINED
    await decline(durable, session, why)
    return f"{plan.text()}\n{DECLINED}"


def _decided(plan: Plan, decisions: dict[str, bool]) -> str:
    approved = [w.call_id for w in plan.writes if decisions[w.call_id]]
    if len(approved) == len(plan.writes):
        return "Approved: every write was made."
    denied = [w.call_id for w in plan.writes if not decisions[w.call_id]]
    return (
        f"Approved {len(approved)} of {len(plan.writes)} writes; denied "
        f"{', '.join(denied)} (the script got POLICY_DENIED there)."
    )


__all__ = ["PREVIEW_ONLY", "Committed", "checked", "decline_plan", "run_with_plans"]
