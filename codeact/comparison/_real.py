"""The real path: the suite against any OpenAI-compatible endpoint, recorded to a cassette.

A capability probe runs first; requests use temperature 0; every task runs ``repeats``
times per style; results are compared in pairs across styles. A cassette records each
request (by a hash of everything that was sent) with its reply, replays offline, and
refuses to replay a request it has not seen, which is what a changed prompt or tool
schema produces.
"""

from __future__ import annotations

import hashlib
import json
import math
import statistics
from pathlib import Path
from typing import Any

from ..contract._call import ToolCall
from ..providers._models import Model, ModelError, ModelReply, ModelRequest


class CassetteMismatch(ModelError):
    """Replay met a request that was never recorded (the prompt or a schema changed)."""


def request_key(model: str, request: ModelRequest) -> str:
    """A hash of everything the request sends (not its delta listener, which sends nothing)."""
    sent = {
        "system": request.system,
        "messages": list(request.messages),
        "tools": list(request.tools),
        "mode": request.mode,
    }
    payload = json.dumps([model, sent], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()


class Cassette:
    """Requests and replies as JSON lines, keyed by the hash of the request."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.entries: dict[str, dict[str, Any]] = {}
        if self.path.exists():
            for line in self.path.read_text().splitlines():
                if line.strip():
                    entry = json.loads(line)
                    self.entries[entry["key"]] = entry["reply"]

    def record(self, key: str, reply: ModelReply) -> None:
        data = {
            "text": reply.text,
            "tool_calls": [
                {"id": c.id, "name": c.name, "arguments": c.arguments} for c in reply.tool_calls
            ],
            "input_tokens": reply.input_tokens,
            "output_tokens": reply.output_tokens,
        }
        self.entries[key] = data
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"key": key, "reply": data}) + "\n")

    def reply(self, key: str) -> ModelReply | None:
        data = self.entries.get(key)
        if data is None:
            return None
        return ModelReply(
            text=data["text"],
            tool_calls=tuple(
                ToolCall(c["id"], c["name"], c["arguments"]) for c in data["tool_calls"]
            ),
            input_tokens=data["input_tokens"],
            output_tokens=data["output_tokens"],
        )


class CassetteModel:
    """Records what ``model`` answers, or (with ``model=None``) replays only."""

    def __init__(self, cassette: Cassette, model: Model | None, *, name: str) -> None:
        self.cassette = cassette
        self.model = model
        self.name = name

    async def respond(self, request: ModelRequest) -> ModelReply:
        key = request_key(self.name, request)
        if self.model is None:
            recorded = self.cassette.reply(key)
            if recorded is None:
                raise CassetteMismatch(
                    "this request was never recorded: the prompt or a tool schema changed"
                )
            return recorded
        reply = await self.model.respond(request)
        self.cassette.record(key, reply)
        return reply


PROBE_TOOL = {
    "name": "echo",
    "description": "Echo a text back.",
    "parameters": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
}


async def probe(model: Model) -> str | None:
    """None if the endpoint calls tools; otherwise what is wrong."""
    request = ModelRequest(
        system="You are a test. Call the echo tool with the text 'ping'.",
        messages=({"role": "user", "content": "Call echo with 'ping'."},),
        tools=(PROBE_TOOL,),  # type: ignore[arg-type]
        mode="native",
    )
    try:
        reply = await model.respond(request)
    except ModelError as error:
        return f"the endpoint failed: {error.message}"
    if not reply.tool_calls:
        return "the endpoint answered without calling the tool: it may not support tool calls"
    return None


def paired(results: list[Any], left: str, right: str, field: str) -> dict[str, float]:
    """Per-task differences ``left - right`` of a metric: mean, standard error, wins."""

    def per_task(style: str) -> dict[str, float]:
        values: dict[str, list[float]] = {}
        for r in results:
            if r.style == style:
                values.setdefault(r.task, []).append(float(getattr(r, field)))
        return {task: statistics.mean(v) for task, v in values.items()}

    a, b = per_task(left), per_task(right)
    differences = [a[t] - b[t] for t in a if t in b]
    if not differences:
        return {"tasks": 0, "mean": math.nan, "stderr": math.nan, "right_lower": 0}
    spread = (
        statistics.stdev(differences) / math.sqrt(len(differences))
        if len(differences) > 1
        else math.nan
    )
    return {
        "tasks": len(differences),
        "mean": statistics.mean(differences),
        "stderr": spread,
        "right_lower": sum(d > 0 for d in differences),
    }


__all__ = ["Cassette", "CassetteMismatch", "CassetteModel", "paired", "probe", "request_key"]
