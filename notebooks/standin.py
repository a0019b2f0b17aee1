"""A stand-in for an OpenAI-compatible model server, on 127.0.0.1: it answers the shop's
five questions (notebooks/shop.py) by fixed rules, natively (a call per step) or with
one script, as a model that knows the answer's shape would. It is not a language model:
it records the cassette the "your own tools" notebook replays, and serves the tests.

Run it: ``python notebooks/standin.py`` (prints its base URL).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

SCRIPTS = {
    "How many units of A1 are in stock?": "stock(sku='A1')",
    "What is the stock value of A1 in EUR?": "stock(sku='A1') * price(sku='A1')",
    "Which fruit SKU has the most units in stock?": (
        "skus = list_skus(category='fruit')\nmax(skus, key=lambda s: stock(sku=s))"
    ),
    "How many units of fruit are in stock in total?": (
        "sum(stock(sku=s) for s in list_skus(category='fruit'))"
    ),
    "Reorder 10 units of every fruit SKU with fewer than 5 in stock; give the order numbers.": (
        "orders = []\nfor s in list_skus(category='fruit'):\n    if stock(sku=s) < 5:\n"
        "        orders.append(reorder(sku=s, quantity=10))\norders"
    ),
}


def native_step(prompt: str, done: list[tuple[str, dict[str, Any], Any]]) -> Any:
    """The next calls (a list of (name, arguments)) for ``prompt``, given the calls made
    and their values; or the answer once there is nothing left to call."""
    values = {json.dumps([name, args], sort_keys=True): value for name, args, value in done}

    def known(name: str, **args: Any) -> Any:
        return values.get(json.dumps([name, args], sort_keys=True), ...)

    if prompt.startswith("How many units of A1"):
        value = known("stock", sku="A1")
        return [("stock", {"sku": "A1"})] if value is ... else value
    if prompt.startswith("What is the stock value"):
        units, unit_price = known("stock", sku="A1"), known("price", sku="A1")
        missing = [("stock", {"sku": "A1"})] if units is ... else []
        missing += [("price", {"sku": "A1"})] if unit_price is ... else []
        return missing or units * unit_price
    skus = known("list_skus", category="fruit")
    if skus is ...:
        return [("list_skus", {"category": "fruit"})]
    counts = {sku: known("stock", sku=sku) for sku in skus}
    unread = [("stock", {"sku": sku}) for sku, count in counts.items() if count is ...]
    if unread:
        return unread[:1]  # one at a time, as a model without parallel calls would
    if prompt.startswith("Which fruit"):
        return max(counts, key=lambda sku: counts[sku])
    if prompt.startswith("How many units of fruit"):
        return sum(counts.values())
    low = [sku for sku, count in counts.items() if count < 5]
    orders = [known("reorder", sku=sku, quantity=10) for sku in low]
    pending = [
        ("reorder", {"sku": s, "quantity": 10})
        for s, o in zip(low, orders, strict=True)
        if o is ...
    ]
    return pending[:1] or orders


def reply_to(request: dict[str, Any]) -> dict[str, Any]:
    """The assistant message for one Chat Completions request."""
    messages = request["messages"]
    prompt = next(m["content"] for m in messages if m["role"] == "user")
    names = {t["function"]["name"] for t in request.get("tools", [])}
    calls_made = [m for m in messages if m["role"] == "assistant" and m.get("tool_calls")]
    step = len(calls_made)
    if "run_code" in names and "stock" not in names:  # code mode: one script, then answer
        if step == 0:
            return _calls(step, [("run_code", {"code": SCRIPTS[prompt]})])
        result = next(m["content"] for m in reversed(messages) if m["role"] == "tool")
        answer = result.rsplit("Result: ", 1)[-1]
        return {"role": "assistant", "content": f"Answer: {answer}"}
    done = _values(messages)
    step_or_answer = native_step(prompt, done)
    if isinstance(step_or_answer, list) and step_or_answer and isinstance(step_or_answer[0], tuple):
        return _calls(step, step_or_answer)
    return {"role": "assistant", "content": f"Answer: {json.dumps(step_or_answer)}"}


def _values(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], Any]]:
    asked: dict[str, tuple[str, dict[str, Any]]] = {}
    for message in messages:
        for call in message.get("tool_calls") or ():
            function = call["function"]
            asked[call["id"]] = (function["name"], json.loads(function["arguments"] or "{}"))
    done = []
    for message in messages:
        if message["role"] == "tool" and message["tool_call_id"] in asked:
            name, args = asked[message["tool_call_id"]]
            try:
                value = json.loads(message["content"])
            except ValueError:
                value = message["content"]
            done.append((name, args, value))
    return done


def _calls(step: int, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"call_{step}_{index}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            for index, (name, arguments) in enumerate(calls)
        ],
    }


class StandIn(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    requests: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.requests.append(request)
        message = reply_to(request)
        if request.get("stream"):
            delta: dict[str, Any] = {"role": "assistant"}
            if message.get("content"):
                delta["content"] = message["content"]
            if message.get("tool_calls"):
                delta["tool_calls"] = [
                    {"index": i, **call} for i, call in enumerate(message["tool_calls"])
                ]
            chunk = {"choices": [{"index": 0, "delta": delta}]}
            body = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()
            kind = "text/event-stream"
        else:
            body = json.dumps({"choices": [{"index": 0, "message": message}]}).encode()
            kind = "application/json"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return


@contextmanager
def serving() -> Iterator[str]:
    """The stand-in on a free port of 127.0.0.1; yields its base URL (``.../v1``)."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


if __name__ == "__main__":
    with serving() as url:
        print(url, flush=True)
        threading.Event().wait()
