"""Preview, then commit: one approval for all the writes a script would make.

Every scenario runs through run_code's ``preview`` option in real worker processes, with
a durable SQLite record, against a world whose tools count their effects. Each one shows:
nothing was written while the script was previewed (the approver looks when it is
asked), exactly one approval prompt, and committed effects equal to the approved writes:
the effects an unpreviewed run of the same script makes on a fresh world, less the
writes the approval denied. Where the world changes between preview and commit, the
commit reports the divergence and writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from codeact import (
    Approval,
    Durable,
    Plan,
    PlanPolicy,
    RulePolicy,
    Runtime,
    SqliteStore,
    ToolCall,
    ToolRegistry,
    UsageError,
    thaw,
    tool,
)
from tests.hosts import REPO

pytestmark = pytest.mark.anyio


@dataclass
class World:
    """What the tools read and change; ``effects`` lists every write made, in order."""

    balances: dict[str, int] = field(default_factory=lambda: {"a": 100, "b": 20})
    customers: list[str] = field(default_factory=lambda: ["ann", "bob", "cy"])
    orders: dict[int, dict[str, Any]] = field(default_factory=dict)
    effects: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def wrote(self, name: str, **arguments: Any) -> None:
        self.effects.append((name, arguments))


def world_tools(world: World) -> ToolRegistry:
    registry = ToolRegistry()

    @tool(read_only=True)
    def balance(account: str) -> int:
        """An account's balance."""
        return world.balances[account]

    @tool(read_only=True)
    def list_customers() -> list[str]:
        """The customers' names."""
        return list(world.customers)

    @tool(read_only=True)
    def get_order(order_id: int) -> dict[str, Any]:
        """One order."""
        return dict(world.orders[order_id])

    @tool(destructive=True)
    def pay(account: str, amount: int) -> dict[str, Any]:
        """Pay ``amount`` into an account."""
        world.wrote("pay", account=account, amount=amount)
        world.balances[account] = world.balances.get(account, 0) + amount
        return {"account": account, "balance": world.balances[account]}

    @tool(destructive=False, read_only=False)
    def send_email(to: str, subject: str) -> str:
        """Send an email."""
        world.wrote("send_email", to=to, subject=subject)
        return f"sent to {to}"

    @tool(read_only=False)
    def create_order(item: str, qty: int) -> dict[str, Any]:
        """Create an order."""
        world.wrote("create_order", item=item, qty=qty)
        order_id = len(world.orders) + 1
        world.orders[order_id] = {"id": order_id, "item": item, "qty": qty, "labels": []}
        return {"id": order_id}

    @tool(read_only=False)
    def tag(order: dict[str, Any], label: str) -> bool:
        """Label an order."""
        world.wrote("tag", order=order, label=label)
        world.orders[order["id"]]["labels"].append(label)
        return True

    for made in (balance, list_customers, get_order, pay, send_email, create_order, tag):
        registry.register(made)
    return registry


class Approver:
    """Answers each question with ``approval``, noting the question and the effects made
    by then; ``meanwhile`` changes the world while the person thinks."""

    def __init__(
        self, world: World, approval: Approval, meanwhile: Callable[[World], None] | None = None
    ) -> None:
        self.world = world
        self.approval = approval
        self.meanwhile = meanwhile
        self.plans: list[Plan] = []
        self.effects_when_asked: list[int] = []

    def __call__(self, question: Any) -> Approval:
        assert isinstance(question, Plan), f"asked about a single call: {question!r}"
        self.plans.append(question)
        self.effects_when_asked.append(len(self.world.effects))
        if self.meanwhile is not None:
            self.meanwhile(self.world)
        return self.approval


def asked_world(
    approval: Approval, meanwhile: Callable[[World], None] | None = None
) -> tuple[World, ToolRegistry, Approver]:
    """A fresh world, its tools, and the approver their policy asks."""
    world = World()
    registry = world_tools(world)
    approver = Approver(world, approval, meanwhile)
    registry.set_policy(RulePolicy(approver=approver))
    return world, registry, approver


@dataclass(frozen=True)
class Scenario:
    name: str
    source: str
    approval: Approval = True
    meanwhile: Callable[[World], None] | None = None
    stops: bool = False  # the preview stops where the script needs a write's result
    diverges: bool = False
    deterministic: bool = True  # a straight run on a fresh world writes the same


def _poorer(world: World) -> None:
    world.balances["a"] = 10


SCENARIOS = [
    Scenario("one write", 'pay(account="a", amount=5)'),
    Scenario(
        "two tools",
        'pay(account="a", amount=5)\nsend_email(to="ann", subject="paid")',
    ),
    Scenario(
        "ten writes in a loop",
        'for i in range(10):\n    pay(account="b", amount=i)',
    ),
    Scenario(
        "two hundred writes in a loop",
        'for i in range(200):\n    pay(account="a", amount=1)\n"done"',
    ),
    Scenario(
        "nested loops",
        'for i in range(3):\n    for j in range(4):\n        pay(account="a", amount=i * 10 + j)',
    ),
    Scenario(
        "a comprehension over a read",
        '[send_email(to=c, subject="news") for c in list_customers()]',
    ),
    Scenario(
        "conditional on a read, taken",
        'if balance("a") > 50:\n    pay(account="b", amount=balance("a") // 2)\n'
        'else:\n    send_email(to="ann", subject="low")',
    ),
    Scenario(
        "conditional on a read, not taken",
        'if balance("b") > 50:\n    pay(account="a", amount=1)\n'
        'else:\n    send_email(to="bob", subject="low balance")',
    ),
    Scenario(
        "results kept and returned",
        'made = [create_order(item=x, qty=2) for x in ["pen", "ink"]]\n{"orders": made}',
    ),
    Scenario(
        "a write given another write's result",
        'order = create_order(item="pen", qty=1)\ntag(order=order, label="rush")\norder',
    ),
    Scenario(
        "reads a write's result",
        'order = create_order(item="pen", qty=3)\nget_order(order_id=order["id"])',
        stops=True,
    ),
    Scenario(
        "branches on a write's result",
        'receipt = pay(account="a", amount=7)\nif receipt["balance"] > 100:\n'
        '    print("rich")\nreceipt',
        stops=True,
    ),
    Scenario(
        "a read changes between preview and commit",
        'b = balance("a")\nif b > 50:\n    pay(account="b", amount=b)',
        meanwhile=_poorer,
        diverges=True,
    ),
    Scenario(
        "a loop over a read that changes",
        'for c in list_customers():\n    send_email(to=c, subject="hello")',
        meanwhile=lambda world: world.customers.append("dee"),
        diverges=True,
    ),
    Scenario(
        "approved per tool",
        'pay(account="a", amount=3)\ntry:\n    send_email(to="ann", subject="x")\n'
        'except Exception as error:\n    print(error)\npay(account="b", amount=4)',
        approval={"pay": True, "send_email": False},
    ),
    Scenario(
        "approved per write",
        'first = pay(account="a", amount=1)\ntry:\n    pay(account="a", amount=1000)\n'
        'except Exception:\n    pass\nsend_email(to="cy", subject="one paid")',
        approval={"s.1": True, "s.2": False, "s.3": True},
    ),
    Scenario(
        "writes made together by async code",
        "import asyncio\nasync def main():\n"
        '    return await asyncio.gather(*(pay(account="b", amount=n) for n in range(5)))\n'
        "asyncio.run(main())",
    ),
    Scenario(
        "writes in a function called from a loop",
        'def settle(n):\n    return pay(account="a", amount=n)\nfor n in range(4):\n    settle(n)',
    ),
    Scenario(
        "entropy and the clock between writes",
        "import uuid, time\nkey = str(uuid.uuid4())\nstamp = time.time()\n"
        "send_email(to=key, subject=str(stamp))\npay(account=key, amount=1)",
        deterministic=False,
    ),
    Scenario(
        "nothing after a decline",
        'pay(account="a", amount=99)\nsend_email(to="ann", subject="paid 99")',
        approval=False,
    ),
]


def durable_runtime(
    registry: ToolRegistry, folder: Path, plans: PlanPolicy | None = None
) -> Runtime:
    store = str(folder / "runs.db")
    return Runtime(registry, durable=Durable(lambda s: SqliteStore(store, s)), plans=plans)


async def unpreviewed_effects(source: str) -> list[tuple[str, dict[str, Any]]]:
    """What the script writes when run straight through, on a fresh world: the oracle."""
    world = World()
    async with Runtime(world_tools(world)) as straight:
        result = await straight.execute(ToolCall("o1", "run_code", {"code": source}))
    assert not result.is_error, result.text
    return world.effects


def run_code(source: str, call_id: str = "s", *, preview: bool = True) -> ToolCall:
    return ToolCall(call_id, "run_code", {"code": source, "preview": preview})


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
async def test_a_previewed_script_writes_nothing_until_one_approval_and_then_exactly_that(
    scenario: Scenario, tmp_path: Path
) -> None:
    world, registry, approver = asked_world(scenario.approval, scenario.meanwhile)
    async with durable_runtime(registry, tmp_path) as host:
        result = await host.execute(run_code(scenario.source), mode="code", session="s1")
        after = await host.execute(
            ToolCall("after", "run_code", {"code": "'still usable'"}), mode="code", session="s1"
        )
    assert not after.is_error, after.text  # the session is free again, whatever happened

    assert approver.effects_when_asked == [0]  # one prompt, and nothing written before it
    [plan] = approver.plans
    assert plan.writes, "every scenario writes"
    assert (plan.stopped is not None) == scenario.stops
    if scenario.diverges:
        assert result.is_error, result.text
        assert result.error.code == "REPLAY_DIVERGED"
        assert "stale" in result.error.message
        assert world.effects == []
        return
    if scenario.approval is False:
        assert result.is_error, result.text
        assert result.error.code == "POLICY_DENIED"
        assert world.effects == []
        return
    assert not result.is_error, result.text
    decisions = plan.decisions(scenario.approval)
    approved = [w for w in plan.writes if decisions[w.call_id]]
    made = world.effects[: len(approved)]
    assert [name for name, _ in made] == [w.tool for w in approved]
    for (_, arguments), write in zip(made, approved, strict=True):
        if not write.uses:  # as planned; a planned result is the commit's own
            assert arguments == write.arguments
    if not scenario.stops:
        assert len(world.effects) == len(approved)  # every approved write, and only those
    if scenario.deterministic:
        expected = await unpreviewed_effects(scenario.source)
        for write in plan.writes:
            if not decisions[write.call_id]:
                expected.remove((write.tool, write.arguments))
        assert world.effects == expected


# The plan itself ----------------------------------------------------------------------


async def test_a_plan_names_each_write_its_line_and_loop_and_where_the_preview_stopped(
    tmp_path: Path,
) -> None:
    world = World()
    source = (
        'total = balance("a")\n'
        "for c in list_customers():\n"
        '    send_email(to=c, subject="hi")\n'
        'order = create_order(item="pen", qty=total)\n'
        'tag(order=order, label="big")\n'
        'print(order["id"])\n'
        'pay(account="a", amount=1)\n'
    )
    async with durable_runtime(world_tools(world), tmp_path) as host:
        plan = await host.preview(source, session="p")
        assert host.plan("p") == plan
    assert world.effects == []
    assert [w.tool for w in plan.writes] == ["send_email"] * 3 + ["create_order", "tag"]
    assert [w.line for w in plan.writes] == [3, 3, 3, 4, 5]
    assert [w.loop for w in plan.writes] == [2, 2, 2, None, None]
    assert plan.writes[3].arguments == {"item": "pen", "qty": 100}
    assert plan.writes[4].uses == (plan.writes[3].call_id,)
    assert plan.reads == 2
    assert plan.stopped is not None
    assert plan.stopped.line == 6
    assert "indexes the result of create_order()" in plan.stopped.message
    text = plan.text()
    assert "3 x send_email, in the loop at line 2" in text
    assert f'tag(label="big", order=<result of {plan.writes[3].call_id}>)' in text
    assert "stopped at line 6" in text


@pytest.mark.parametrize(
    ("expression", "what"),
    [
        ("r == 1", "compares"),
        ("str(r)", "formats"),
        ("f'{r}'", "formats"),
        ("r['id']", "indexes"),
        ("r.id", "reads .id of"),
        ("list(r)", "iterates over"),
        ("len(r)", "measures"),
        ("r + 1", "computes with"),
        ("1 in r", "searches"),
        ("bool(r)", "branches on"),
        ("int(r)", "converts"),
    ],
)
async def test_every_way_of_looking_into_a_pending_value_stops_the_preview_uncaught(
    expression: str, what: str, tmp_path: Path
) -> None:
    world = World()
    source = (
        'r = pay(account="a", amount=1)\n'
        "try:\n"
        f"    {expression}\n"
        "except:\n"
        "    pass\n"
        'send_email(to="ann", subject="after")\n'
    )
    async with durable_runtime(world_tools(world), tmp_path) as host:
        plan = await host.preview(source, session="p")
    assert [w.tool for w in plan.writes] == ["pay"]  # the except did not let it go on
    assert plan.stopped is not None
    assert plan.stopped.line == 3
    assert what in plan.stopped.message
    assert world.effects == []


async def test_storing_passing_and_returning_pending_values_do_not_stop_the_preview(
    tmp_path: Path,
) -> None:
    world = World()
    source = (
        'a = create_order(item="a", qty=1)\n'
        "kept = {'first': a, 'all': [a]}\n"
        "same = a is kept['first']\n"
        'b = tag(order=a, label="x")\n'
        "[kept, b, same]\n"
    )
    async with durable_runtime(world_tools(world), tmp_path) as host:
        plan = await host.preview(source, session="p")
        assert plan.stopped is None
        result = await host.commit("p", True)
    assert not result.is_error, result.text
    assert thaw(result.value)["result"] == [
        {"first": {"id": 1}, "all": [{"id": 1}]},
        True,
        True,
    ]
    assert [name for name, _ in world.effects] == ["create_order", "tag"]


FORGED_MARK = '"\\x00codeact.pending:" + "1"'


@pytest.mark.parametrize(
    "forged_call",
    [
        f"send_email(to={FORGED_MARK}, subject='x')",
        f"tag(order={{'id': {FORGED_MARK}}}, label='x')",
        f"tag(order={{'id': 1, 'notes': [[{FORGED_MARK}]]}}, label='x')",
        f"send_email(to=Text({FORGED_MARK}), subject='x')",
        f"tag(order=Pair(1, {FORGED_MARK})._asdict(), label='x')",
    ],
    ids=["argument", "nested", "deeper", "str subclass", "namedtuple"],
)
async def test_a_script_cannot_forge_the_mark_of_a_planned_writes_result(
    forged_call: str, tmp_path: Path
) -> None:
    world = World()
    source = (
        "import collections\n"
        "class Text(str):\n    pass\n"
        "Pair = collections.namedtuple('Pair', 'id note')\n"
        'order = create_order(item="pen", qty=1)\n'
        "try:\n"
        f"    {forged_call}\n"
        "except TypeError as error:\n"
        "    print(error)\n"
    )
    async with durable_runtime(world_tools(world), tmp_path) as host:
        plan = await host.preview(source, session="p")
        assert [w.tool for w in plan.writes] == ["create_order"]  # the forged call never left
        assert "<result of" not in plan.text()
        result = await host.commit("p", True)
    assert not result.is_error, result.text
    assert "mark of a planned write's result" in result.text
    assert [name for name, _ in world.effects] == ["create_order"]  # what the plan showed


async def test_a_forged_mark_returned_as_the_value_is_refused(tmp_path: Path) -> None:
    world = World()
    source = f'create_order(item="pen", qty=1)\n[{FORGED_MARK}]'
    async with durable_runtime(world_tools(world), tmp_path) as host:
        await host.preview(source, session="p")
        result = await host.commit("p", True)
    assert result.is_error
    assert "mark of a planned write's result" in result.text


# Commit -------------------------------------------------------------------------------


async def test_a_commit_past_the_stop_plans_the_next_writes_and_asks_again(
    tmp_path: Path,
) -> None:
    world, registry, approver = asked_world(True)
    source = (
        'order = create_order(item="pen", qty=1)\n'
        'if get_order(order_id=order["id"])["qty"] == 1:\n'
        '    tag(order=order, label="single")\n'
    )
    async with durable_runtime(registry, tmp_path) as host:
        result = await host.execute(run_code(source), mode="code", session="s")
    assert not result.is_error, result.text
    assert [[w.tool for w in plan.writes] for plan in approver.plans] == [
        ["create_order"],
        ["tag"],
    ]
    assert approver.effects_when_asked == [0, 1]  # the second plan after the first's write
    assert [name for name, _ in world.effects] == ["create_order", "tag"]
    assert "Approved: every write was made." in result.text


async def test_a_plan_with_no_approver_waits_and_commit_decides_it_later(tmp_path: Path) -> None:
    world = World()
    async with durable_runtime(world_tools(world), tmp_path) as host:
        waiting = await host.execute(
            run_code('pay(account="a", amount=2)\n"ok"'), mode="code", session="s"
        )
        assert waiting.error.code == "SUSPENDED"
        assert "Plan for run s: 1 write" in waiting.error.message
        refused = await host.execute(run_code("1", "t", preview=False), mode="code", session="s")
        assert refused.error.code == "SUSPENDED"  # the session waits on the plan
        assert world.effects == []
        with pytest.raises(UsageError, match="undecided"):
            await host.commit("s", {})
        committed = await host.commit("s", True)
        assert thaw(committed.value)["result"] == "ok"
        assert world.effects == [("pay", {"account": "a", "amount": 2})]
        assert host.plan("s") is None


async def test_a_declined_plan_leaves_the_session_with_the_names_it_had(tmp_path: Path) -> None:
    world = World()
    async with durable_runtime(world_tools(world), tmp_path) as host:
        first = await host.execute(run_code("x = 1", preview=False), mode="code", session="s")
        assert not first.is_error, first.text
        await host.preview('x = pay(account="a", amount=1)', session="s")
        declined = await host.commit("s", False)
        assert declined.error.code == "POLICY_DENIED"
        await host.executor.close_session("s")  # the next run rebuilds the names from the log
        later = await host.execute(run_code("x", "c3", preview=False), mode="code", session="s")
    assert thaw(later.value)["result"] == 1
    assert world.effects == []


# Plan policies ------------------------------------------------------------------------


async def test_a_plan_over_the_maximum_or_a_quota_is_refused_before_anyone_is_asked(
    tmp_path: Path,
) -> None:
    for policy, source, reason in [
        (PlanPolicy(max_writes=5), 'for i in range(6):\n    pay(account="a", amount=i)', "6"),
        (
            PlanPolicy(quotas={"send_email": 2}),
            'for c in list_customers():\n    send_email(to=c, subject="x")',
            "3 send_email writes, more than 2",
        ),
    ]:
        world, registry, approver = asked_world(True)
        folder = tmp_path / str(id(policy))
        folder.mkdir()
        async with durable_runtime(registry, folder, policy) as host:
            result = await host.execute(run_code(source), mode="code", session="s")
        assert result.error.code == "POLICY_DENIED", result.text
        assert reason in result.error.message
        assert approver.plans == []
        assert world.effects == []


async def test_writes_inside_loops_are_approved_together_under_the_batch_rule(
    tmp_path: Path,
) -> None:
    world = World()
    policy = PlanPolicy(loops_need_batch=True)
    source = 'pay(account="a", amount=1)\nfor i in range(3):\n    pay(account="b", amount=i)'
    async with durable_runtime(world_tools(world), tmp_path, policy) as host:
        plan = await host.preview(source, session="s")
        looped = plan.writes[1].call_id
        with pytest.raises(UsageError, match="inside the loop at line 2"):
            await host.commit("s", {plan.writes[0].call_id: True, looped: True})
        assert world.effects == []
        result = await host.commit("s", {"pay": True})
    assert not result.is_error, result.text
    assert len(world.effects) == 4


async def test_always_previews_every_run_the_model_makes(tmp_path: Path) -> None:
    _, registry, approver = asked_world(True)
    async with durable_runtime(registry, tmp_path, PlanPolicy(always=True)) as host:
        schema = next(s for s in host.schemas("code") if s["name"] == "run_code")
        assert "preview" in schema["parameters"]["properties"]
        result = await host.execute(
            run_code('pay(account="a", amount=1)', preview=False), mode="code", session="s"
        )
    assert not result.is_error, result.text
    assert len(approver.plans) == 1
    assert approver.effects_when_asked == [0]


async def test_preview_on_a_runtime_that_records_nothing_is_a_clear_error() -> None:
    world = World()
    async with Runtime(world_tools(world)) as host:
        schema = next(s for s in host.schemas("code") if s["name"] == "run_code")
        assert "preview" not in schema["parameters"]["properties"]
        result = await host.execute(run_code('pay(account="a", amount=1)'), mode="code")
    assert result.error.code == "INVALID_ARGUMENTS"
    assert world.effects == []


# Many sessions at once ----------------------------------------------------------------


async def test_previews_of_many_sessions_at_once_keep_their_plans_apart(tmp_path: Path) -> None:
    import anyio

    world = World()
    count = 6
    plans: dict[str, Plan] = {}
    async with durable_runtime(world_tools(world), tmp_path) as host:

        async def preview(n: int) -> None:
            plans[f"s{n}"] = await host.preview(
                f'for i in range({n + 1}):\n    pay(account="s{n}", amount=i)', session=f"s{n}"
            )

        async with anyio.create_task_group() as group:
            for n in range(count):
                group.start_soon(preview, n)
        assert world.effects == []

        async def commit(n: int) -> None:
            result = await host.commit(f"s{n}", True)
            assert not result.is_error, result.text

        async with anyio.create_task_group() as group:
            for n in range(count):
                group.start_soon(commit, n)
    for n in range(count):
        assert [w.arguments["account"] for w in plans[f"s{n}"].writes] == [f"s{n}"] * (n + 1)
    paid: Mapping[str, list[int]] = {
        account: [a["amount"] for name, a in world.effects if a["account"] == account]
        for account in (f"s{n}" for n in range(count))
    }
    assert paid == {f"s{n}": list(range(n + 1)) for n in range(count)}


@pytest.mark.parametrize(
    "attack",
    [
        "r._position",
        "r._tool",
        "getattr(type(r), '__init__')(r, 2, 'other')",
        "getattr(r, '__reduce_ex__')(2)",
        "getattr(object, '__getattribute__')(r, '_tool')",
        "getattr(r, '__dict__')",
        "vars(r)",
        "dir(r)",
        "copy.copy(r) == r",  # a copy is the pending value itself: comparing it stops
        "type(r)(9, 'forged')",
    ],
)
async def test_a_pending_value_gives_a_script_nothing_to_escape_with(
    attack: str, tmp_path: Path
) -> None:
    world = World()
    source = (
        f'import copy\nr = pay(account="a", amount=1)\nleak = {attack}\n'
        'send_email(to="x", subject="y")\n'
    )
    async with durable_runtime(world_tools(world), tmp_path) as host:
        plan = await host.preview(source, session="p")
    assert [w.tool for w in plan.writes] == ["pay"]  # the script went no further
    assert plan.stopped is not None
    assert plan.stopped.line == 3
    assert world.effects == []


def test_the_plan_the_readme_shows_is_what_a_model_reads(
    capsys: pytest.CaptureFixture[str],
) -> None:
    guide = (REPO / "docs" / "guides" / "durable.md").read_text(encoding="utf-8")
    section = guide.split("## Preview, then commit", 1)[1]
    snippet = section.split("```python\n", 1)[1].split("```", 1)[0]
    shown = section.split("```text\n", 1)[1].split("```", 1)[0]
    exec(compile(snippet, "durable.md", "exec"), {"__name__": "readme"})
    assert capsys.readouterr().out == shown


async def test_an_agent_previews_when_its_model_asks_and_commits_when_a_person_decides(
    tmp_path: Path,
) -> None:
    from codeact import Agent, ModelReply, ScriptedModel

    world = World()
    source = 'for c in list_customers():\n    send_email(to=c, subject="sale")\n"sent"'
    code = ToolCall("m1", "run_code", {"code": source, "preview": True})
    model = ScriptedModel(
        [
            ModelReply(tool_calls=(code,)),
            ModelReply(text="The emails wait for your approval."),
            ModelReply(text="Sent."),
        ]
    )
    async with durable_runtime(world_tools(world), tmp_path) as host:
        agent = Agent(host, model, script_session="shop")
        assert await agent.run("Email everyone") == "The emails wait for your approval."
        read = model.requests[-1].messages[-1]["content"]
        assert "3 x send_email, in the loop at line 1" in str(read)
        assert world.effects == []
        assert await agent.commit({"send_email": True}) == "Sent."
    told = model.requests[-1].messages[-1]
    assert told["role"] == "user"
    assert "decided write by write" in told["content"]
    assert '"sent"' in told["content"]
    assert [args["to"] for _, args in world.effects] == ["ann", "bob", "cy"]


CRASHING_HOST = """
import os, sys
from codeact import Durable, Runtime, SqliteStore, ToolRegistry, tool

ledger, store = sys.argv[1], sys.argv[2]

@tool(destructive=True)
def pay(account: str, amount: int) -> int:
    \"\"\"Pay; the host dies right after the second payment, before its answer is kept.\"\"\"
    with open(ledger, "a") as kept:
        kept.write(f"{account} {amount}\\n")
    if amount == 2:
        os._exit(9)
    return amount

registry = ToolRegistry()
registry.register(pay)
with Runtime(registry, durable=Durable(lambda s: SqliteStore(store, s))) as host:
    host.preview_sync(sys.stdin.read(), session="s")
    host.commit_sync("s", True)
"""

PAYMENTS = """
for n in range(1, 4):
    try:
        pay(account="a", amount=n)
    except Exception as error:
        print("refused", n)
"""


async def test_a_host_that_dies_mid_commit_never_makes_an_approved_write_twice(
    tmp_path: Path,
) -> None:
    import sys

    import anyio

    ledger, store = tmp_path / "ledger", tmp_path / "runs.db"
    with anyio.fail_after(120):
        died = await anyio.run_process(
            [sys.executable, "-c", CRASHING_HOST, str(ledger), str(store)],
            input=PAYMENTS.encode(),
            check=False,
        )
    assert died.returncode == 9, died.stderr.decode()
    assert ledger.read_text().splitlines() == ["a 1", "a 2"]

    registry = ToolRegistry()

    @tool(destructive=True)
    def pay(account: str, amount: int) -> int:
        """Pay."""
        with open(ledger, "a") as kept:
            kept.write(f"{account} {amount}\n")
        return amount

    registry.register(pay)
    async with durable_runtime(registry, tmp_path) as host:
        assert host.plan("s") is None  # every write was decided: none waits for the plan
        asked = await host.resume("s")
        assert asked.error.code == "SUSPENDED"
        [unknown] = host.pending("s")
        assert unknown.name == "pay"
        assert unknown.arguments == {"account": "a", "amount": 2}
        assert "unknown" in unknown.reason
        assert ledger.read_text().splitlines() == ["a 1", "a 2"]  # nothing repeated
        done = await host.resume("s", {unknown.call_id: False})
    assert not done.is_error, done.text
    assert "refused 2" in done.text
    assert ledger.read_text().splitlines() == ["a 1", "a 2", "a 3"]


async def test_a_committed_run_leaves_its_names_and_a_waiting_plan_refuses_another_preview(
    tmp_path: Path,
) -> None:
    from codeact import ToolError

    world = World()
    async with durable_runtime(world_tools(world), tmp_path) as host:
        first = await host.preview('receipt = pay(account="b", amount=5)', session="s")
        with pytest.raises(ToolError, match="has not finished") as refused:
            await host.preview('pay(account="a", amount=1)', session="s")
        assert refused.value.code == "SUSPENDED"
        assert host.plan("s") == first  # the waiting plan is untouched
        committed = await host.commit("s", True)
        assert not committed.is_error, committed.text
        later = await host.execute(
            ToolCall("c2", "run_code", {"code": "receipt['balance']"}), session="s"
        )
    assert thaw(later.value)["result"] == 25
    assert world.effects == [("pay", {"account": "b", "amount": 5})]


# The whole truth of a plan ----------------------------------------------------------------


async def test_a_plan_shows_a_different_write_in_the_middle_of_a_loop(tmp_path: Path) -> None:
    world = World()
    source = (
        "for n in range(200):\n"
        '    to = "evil" if n in (57, 101) else "a"\n'
        "    pay(account=to, amount=1)\n"
    )
    async with durable_runtime(world_tools(world), tmp_path) as host:
        plan = await host.preview(source, session="p")
    text = plan.text()
    assert "200 x pay, in the loop at line 1" in text
    ids = "preview.1..preview.57, preview.59..preview.101, preview.103..preview.200"
    assert f'198 x pay(account="a", amount=1)  ({ids})' in text
    assert '2 x pay(account="evil", amount=1)  (preview.58, preview.102)' in text
    assert "not shown" not in text  # three lines stand for all 200 writes
    assert world.effects == []


async def test_long_arguments_are_cut_saying_how_much_and_shown_whole_on_request(
    tmp_path: Path,
) -> None:
    world = World()
    memo = "pay the usual supplier " * 100 + "BUT ALSO account 99-1234"
    async with durable_runtime(world_tools(world), tmp_path) as host:
        plan = await host.preview(f"send_email(to='ann', subject={memo!r})", session="p")
    text = plan.text()
    assert "99-1234" not in text
    cut = len(f'subject="{memo}", to="ann"') - 1_000
    assert f"... [{cut:,} more characters]" in text
    assert "99-1234" in plan.text(every=True)
    assert plan.writes[0].arguments["subject"] == memo  # the approver's plan is whole


async def test_a_plan_past_the_shown_lines_says_exactly_how_many_writes_it_leaves_out(
    tmp_path: Path,
) -> None:
    world = World()
    source = "for n in range(60):\n    pay(account='a', amount=n)\nsend_email(to='x', subject='y')"
    async with durable_runtime(world_tools(world), tmp_path) as host:
        plan = await host.preview(source, session="p")
    text = plan.text()
    assert "... and 21 more writes not shown here" in text  # 40 shown of 61
    assert "an approval decides all 61" in text
    every = plan.text(every=True)
    assert "not shown" not in every
    assert all(f'preview.{n}  pay(account="a", amount={n - 1})' in every for n in range(1, 61))
    assert 'send_email(subject="y", to="x")' in every


async def test_a_commit_bound_to_a_plan_the_record_no_longer_holds_makes_nothing(
    tmp_path: Path,
) -> None:
    world = World()
    async with durable_runtime(world_tools(world), tmp_path) as host:
        seen = await host.preview("pay(account='a', amount=5)", session="s")
        assert seen.digest.startswith("sha256:")
        assert seen.to_dict()["digest"] == seen.digest
        declined = await host.commit("s", False)
        assert declined.is_error
        other = await host.preview("pay(account='evil', amount=500)", session="s")
        assert other.digest != seen.digest
        result = await host.commit("s", True, digest=seen.digest)
        assert result.is_error
        assert result.error.code == "SUSPENDED"
        assert "not the one decided" in result.error.message
        assert world.effects == []
        assert host.plan("s") == other  # it still waits, for a decision on itself
        made = await host.commit("s", True, digest=other.digest)
    assert not made.is_error, made.text
    assert world.effects == [("pay", {"account": "evil", "amount": 500})]


async def test_an_approval_given_while_the_record_changed_makes_nothing(tmp_path: Path) -> None:
    world = World()
    registry = world_tools(world)
    other_host = durable_runtime(world_tools(world), tmp_path)
    asked: list[Plan] = []

    def approver(plan: Any) -> Approval:
        # while the person thinks, another host declines the plan and previews another
        asked.append(plan)
        other_host.commit_sync("s", False)
        other_host.preview_sync("pay(account='evil', amount=500)", session="s")
        return True

    registry.set_policy(RulePolicy(approver=approver))
    with other_host:
        async with durable_runtime(registry, tmp_path) as host:
            result = await host.execute(
                run_code("pay(account='a', amount=5)"), mode="code", session="s"
            )
    assert len(asked) == 1
    assert result.is_error
    assert "is not waiting to resume" in result.error.message  # its plan was replaced
    assert world.effects == []  # neither the approved plan's write nor the other's


async def test_a_planned_write_and_a_pending_call_name_their_tool_alike(tmp_path: Path) -> None:
    world = World()
    async with durable_runtime(world_tools(world), tmp_path) as host:
        plan = await host.preview("pay(account='a', amount=5)", session="p")
        (write,) = plan.writes
        assert write.tool == write.name == "pay"
        (pending,) = host.pending("p")
        assert pending.name == pending.tool == "pay"
        assert pending.call_id == write.call_id
