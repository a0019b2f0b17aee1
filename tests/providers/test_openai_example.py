"""The official openai client, driven by codeact, against an OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest
from openai import OpenAI

from examples.openai_loop import answer

SCRIPT = (
    "total = 0\nfor item in ['apples', 'pears']:\n    total += stock(item) * price(item)\ntotal"
)


class ScriptedServer(BaseHTTPRequestHandler):
    """Chat Completions: first a run_code call, then an answer built from the tool result."""

    requests: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.requests.append(body)
        tool_messages = [m for m in body["messages"] if m["role"] == "tool"]
        if not tool_messages:
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "run_code", "arguments": json.dumps({"code": SCRIPT})},
                    }
                ],
            }
        else:
            message = {"role": "assistant", "content": f"Worth: {tool_messages[-1]['content']}"}
        payload = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture
def server() -> Iterator[str]:
    ScriptedServer.requests = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), ScriptedServer)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_the_openai_client_loop_runs_a_script_and_answers(server: str) -> None:
    client = OpenAI(base_url=server, api_key="test", max_retries=0, timeout=10)
    text = answer("What is our stock worth?", client=client, model="local")
    assert text == "Worth: Result: 10.0"  # 12 * 0.5 + 5 * 0.8, computed by the script
    first, second = ScriptedServer.requests
    assert [t["function"]["name"] for t in first["tools"]] == ["run_code"]
    assert second["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "Result: 10.0",
    }
