"""A host for the durable-run tests: tools that count their effects in a ledger file, and
the commands a second host process runs (``python -m tests.durable.durable_host ...``).

The ledger is outside every host, as a real system's effects are: each effect is one
line appended (``tool key``), so a host killed at any instant leaves whole lines. The
idempotent tool (``add``) keeps its promise as a real one would, by its idempotency
key: a key already in the ledger is not applied again. ``note`` and ``pay`` are not
idempotent: each call is one effect, whoever repeats it.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from codeact import (
    LATER,
    Durable,
    EventStore,
    JsonlStore,
    PostgresStore,
    ProcessExecutor,
    RulePolicy,
    Runtime,
    SqliteStore,
    ToolCall,
    ToolExecutionResult,
    ToolRegistry,
    ask,
    idempotency_key,
    tool,
)

SESSION = "durable"
HASH_SEED = 1234

# A 100-call script: 50 idempotent calls and 50 that are not. What it passes to its
# notes holds the clock and entropy (a replay that read them afresh would call note
# differently, and be refused); what it returns holds what is the same on every run
# (a seeded random, and a set's and a dict's order, which the hash seed fixes).
HUNDRED_CALLS = """
import random, time, uuid, secrets
seeded = random.Random(7)
total = 0
for i in range(50):
    total = add(total, i)
    note(f"step {i}: {total} {uuid.uuid4()} {secrets.token_hex(4)} {random.random()}")
started = time.time()
words = {f"w{i}" for i in range(8)}
print(total, list(words), list({f"key{i}": i for i in range(3)}))
{"total": total, "words": list(words), "draws": [seeded.random() for _ in range(3)]}
"""


class Ledger:
    """Effects as lines ``tool key``, a file per session in the folder ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _file(self, key: str) -> Path:
        return self.path / (key.split("/", 1)[0] or "none")

    def apply(self, name: str, key: str) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        fd = os.open(self._file(key), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{name} {key}\n".encode())
        finally:
            os.close(fd)

    def lines(self, session: str | None = None) -> list[tuple[str, str]]:
        files = [self.path / session] if session else sorted(self.path.glob("*"))
        found = []
        for file in files:
            if file.exists():
                for line in file.read_text().splitlines():
                    name, key = line.split(" ", 1)
                    found.append((name, key))
        return found

    def counts(self, session: str | None = None) -> Counter[tuple[str, str]]:
        return Counter(self.lines(session))

    def has(self, key: str) -> bool:
        return any(k == key for _, k in self.lines(key.split("/", 1)[0]))


def registry(
    ledger: Ledger,
    *,
    approver: Callable[[Any], Any] | None = None,
    note_parameter: str = "text",
) -> ToolRegistry:
    """The tools; ``note_parameter`` renames note's parameter (a tool that changed)."""

    @tool(annotations={"idempotentHint": True})
    def add(total: int, step: int) -> int:
        """Add ``step`` to ``total`` (idempotent: applied once per key)."""
        key = idempotency_key() or "none"
        if not ledger.has(key):
            ledger.apply("add", key)
        return total + step

    @tool
    def note(text: str) -> str:
        """Write a note (not idempotent: every call is an effect)."""
        ledger.apply("note", idempotency_key() or "none")
        return text.upper()

    @tool
    def pay(amount: int) -> str:
        """Pay ``amount`` (needs a person's approval)."""
        ledger.apply("pay", idempotency_key() or "none")
        return f"paid {amount}"

    @tool(name="note")
    def note_changed(message: str) -> str:
        """Write a note (its parameter renamed)."""
        ledger.apply("note", idempotency_key() or "none")
        return message.upper()

    policy = RulePolicy([ask("pay")], approver=approver or (lambda invocation: LATER))
    found = ToolRegistry(policy=policy)
    for definition in (add, note if note_parameter == "text" else note_changed, pay):
        found.register(definition)
    return found


def open_store(kind: str, where: str) -> Callable[[str], EventStore]:
    if kind == "jsonl":
        return lambda name: JsonlStore(Path(where) / f"{name}.jsonl")
    if kind == "sqlite":
        return lambda name: SqliteStore(where, name)
    return lambda name: PostgresStore(where, name)


def runtime(kind: str, where: str, ledger: Ledger) -> Runtime:
    return Runtime(registry(ledger), durable=Durable(open_store(kind, where), hash_seed=HASH_SEED))


def shown(result: ToolExecutionResult) -> dict[str, Any]:
    """A result as JSON data: what the test compares byte for byte."""
    return {
        "error": result.error.code if result.is_error else None,
        "text": result.text,
        "value": None if result.is_error else json.loads(json.dumps(result.to_dict()["value"])),
    }


class KillAfter:
    """A store that calls ``then`` right after its ``at``-th append (across the stores it
    opens): a kill at one event boundary."""

    def __init__(self, open_inner: Callable[[str], EventStore], at: int, then: Callable[[], None]):
        self._open_inner = open_inner
        self.at = at
        self.then = then
        self.appended = 0

    def __call__(self, name: str) -> EventStore:
        inner = self._open_inner(name)
        outer = self

        class Counted:
            @property
            def name(self) -> str:
                return inner.name

            def load(self) -> list[Any]:
                return inner.load()

            def append(self, event: Any) -> None:
                inner.append(event)
                outer.appended += 1
                if outer.appended == outer.at:
                    outer.then()

        return Counted()


async def _start(kind: str, where: str, ledger_path: str, source: str) -> None:
    ledger = Ledger(Path(ledger_path))
    async with runtime(kind, where, ledger) as host:
        result = await host.execute(ToolCall("c1", "run_code", {"code": source}), session=SESSION)
    print(json.dumps(shown(result)), flush=True)


async def _resume(kind: str, where: str, ledger_path: str, decision: str) -> None:
    ledger = Ledger(Path(ledger_path))
    async with runtime(kind, where, ledger) as host:
        pending = host.pending(SESSION)
        result = await host.resume(SESSION, {p.call_id: decision == "approve" for p in pending})
    print(json.dumps(shown(result)), flush=True)


def _crash_at(kind: str, where: str, ledger_path: str, session: str, at: int) -> None:
    """Run the hundred-call script on a host that SIGKILLs itself after event ``at``."""
    ledger = Ledger(Path(ledger_path))

    def die() -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    store = KillAfter(open_store(kind, where), at, die)
    host = Runtime(
        registry(ledger),
        durable=Durable(store, hash_seed=HASH_SEED),
        # one worker, started afresh: no template for a host that lives for one run
        executor=ProcessExecutor(hash_seed=HASH_SEED, template=False, warm=0),
    )

    async def run() -> None:
        async with host:
            call = ToolCall("c1", "run_code", {"code": HUNDRED_CALLS})
            await host.execute(call, session=session)

    asyncio.run(run())
    os._exit(3)  # the kill point was never reached


def zygote() -> None:
    """Fork a crashing host per request, from a process that has imported everything
    once: ``kind where ledger session at`` per line in, ``at returncode`` per line out."""
    for line in sys.stdin:
        kind, where, ledger_path, session, at = line.split()
        pid = os.fork()
        if pid == 0:
            try:
                _crash_at(kind, where, ledger_path, session, int(at))
            finally:
                os._exit(4)
        _, status = os.waitpid(pid, 0)
        print(at, os.waitstatus_to_exitcode(status), flush=True)


if __name__ == "__main__":
    command, *rest = sys.argv[1:]
    if command == "zygote":
        zygote()
    elif command == "start":
        asyncio.run(_start(rest[0], rest[1], rest[2], rest[3]))
    elif command == "resume":
        asyncio.run(_resume(rest[0], rest[1], rest[2], rest[3]))
