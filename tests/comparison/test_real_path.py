"""The real path: probe, temperature 0, repeats, pairs, and a cassette that refuses changes.

The endpoint is an OpenAI-compatible server on 127.0.0.1 that answers like a model
working through each task's plan, over the OpenAI wire format.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import anyio
import pytest

from codeact.cli._compare import main as compare_command
from codeact.comparison._behaviour import plan_model
from codeact.comparison._m3tooleval import DOMAIN_TOOLS, domain_tools
from codeact.comparison._plans import PLANS
from codeact.comparison._real import Cassette, CassetteMismatch, CassetteModel, request_key
from codeact.comparison._suite import planned_tasks, run_suite
from codeact.providers._models import ModelRequest

TASKS = planned_tasks()[:3]


class PlanEndpoint(BaseHTTPRequestHandler):
    seen: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        self.respond(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))

    def respond(self, body: dict[str, Any]) -> None:
        self.seen.append(body)
        names = [t["function"]["name"] for t in body.get("tools", [])]
        if names == ["echo"]:
            message = {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "p1",
                        "function": {"name": "echo", "arguments": '{"text": "ping"}'},
                    }
                ]
            }
        else:
            message = self.plan_reply(body, names)
        events = [
            {"choices": [{"index": 0, "delta": message}]},
            {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 1}},
        ]
        data = "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode() + b"data: [DONE]\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def plan_reply(self, body: dict[str, Any], names: list[str]) -> dict[str, Any]:
        instruction = next(m["content"] for m in body["messages"] if m["role"] == "user")
        task = next(t for t in TASKS if t.instruction == instruction)
        tools = {t.name: t for t in domain_tools(task.domain)}
        messages = []
        for m in body["messages"]:
            if m["role"] == "tool":
                messages.append(
                    {
                        "role": "tool",
                        "call_id": m["tool_call_id"],
                        "content": m["content"],
                        "is_error": m["content"].startswith("Error ["),
                    }
                )
        style = "code" if names == ["run_code"] else "native"
        reply = plan_model(PLANS[task.name], style, tools).function(
            ModelRequest(system="", messages=tuple(messages), tools=(), mode=style)
        )
        if reply.tool_calls:  # type: ignore[union-attr]
            return {
                "tool_calls": [
                    {"index": i, "id": c.id, "function": {"name": c.name, "arguments": c.arguments}}
                    for i, c in enumerate(reply.tool_calls)  # type: ignore[union-attr]
                ]
            }
        return {"content": reply.text}  # type: ignore[union-attr]

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture
def endpoint() -> Iterator[str]:
    PlanEndpoint.seen = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), PlanEndpoint)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_record_against_an_endpoint_then_replay_offline(
    endpoint: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cassette = tmp_path / "run.jsonl"
    arguments = [
        "--model",
        "local",
        "--base-url",
        endpoint,
        "--api-key",
        "k",
        "--tasks",
        "3",
        "--styles",
        "native,code",
        "--repeats",
        "2",
        "--cassette",
        str(cassette),
    ]
    assert compare_command(arguments) == 0
    recorded = capsys.readouterr().out
    assert "native                3/6" not in recorded
    assert "6/6" in recorded  # three tasks, two repeats, every run right
    assert "Paired differences per task (native minus others)" in recorded
    assert PlanEndpoint.seen[0]["tools"][0]["function"]["name"] == "echo"  # the probe came first
    assert all(body.get("temperature") == 0 for body in PlanEndpoint.seen)
    assert (
        compare_command(
            [
                "--replay",
                "--cassette",
                str(cassette),
                "--model",
                "local",
                "--tasks",
                "3",
                "--styles",
                "native,code",
            ]
        )
        == 0
    )
    replayed = capsys.readouterr().out
    rows = [line.split() for line in replayed.splitlines() if line.startswith(("native ", "code "))]
    assert [(row[0], row[1]) for row in rows] == [
        ("native", "3/3"),
        ("code", "3/3"),
    ]  # no endpoint needed


def test_replay_refuses_a_changed_tool_schema(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cassette = Cassette(tmp_path / "c.jsonl")
    offline = plan_model(
        PLANS[TASKS[0].name], "native", {t.name: t for t in DOMAIN_TOOLS[TASKS[0].domain]}
    )
    recorder = CassetteModel(cassette, offline, name="m")
    _, results = anyio.run(lambda: run_suite(TASKS[:1], ("native",), model=recorder))
    assert results[0].success
    replay = CassetteModel(Cassette(tmp_path / "c.jsonl"), None, name="m")
    _, again = anyio.run(lambda: run_suite(TASKS[:1], ("native",), model=replay))
    assert again[0].success
    tools = list(DOMAIN_TOOLS[TASKS[0].domain])
    tools[0] = dataclasses.replace(tools[0], description=tools[0].description + " Now reworded.")
    monkeypatch.setitem(DOMAIN_TOOLS, TASKS[0].domain, tools)
    _, changed = anyio.run(lambda: run_suite(TASKS[:1], ("native",), model=replay))
    assert not changed[0].success  # the replay refused the request with the reworded schema
    request = ModelRequest(system="s", messages=(), tools=(), mode="native")
    with pytest.raises(CassetteMismatch, match="never recorded"):
        anyio.run(replay.respond, request)
    assert request_key("m", request) not in replay.cassette.entries


class RefusingAfterProbe(PlanEndpoint):
    """Answers the probe, then refuses every task's request (a bad key scope, a quota)."""

    def respond(self, body: dict[str, Any]) -> None:
        if [t["function"]["name"] for t in body.get("tools", [])] == ["echo"]:
            super().respond(body)
            return
        data = json.dumps({"error": {"message": "model not allowed for this key"}}).encode()
        self.send_response(400)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def test_a_comparison_whose_every_run_fails_says_why_and_exits_non_zero(
    capsys: pytest.CaptureFixture[str],
) -> None:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), RefusingAfterProbe)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
        arguments = ["--model", "local", "--base-url", url, "--api-key", "k", "--tasks", "2"]
        arguments += ["--styles", "native,code"]
        code = compare_command(arguments)
    finally:
        httpd.shutdown()
        httpd.server_close()
    said = capsys.readouterr()
    assert code == 1
    failures = [line for line in said.err.splitlines() if line.startswith("failed: ")]
    assert len(failures) == 4  # two tasks in two styles, each named with its reason
    assert all("model not allowed for this key" in line for line in failures)
    assert "every run failed" in said.err
