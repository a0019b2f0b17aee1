"""The standard tools on real files, a real HTTP server on 127.0.0.1 and a real shell."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from codeact import Invocation, Mode, Runtime, ToolCall, ToolExecutionResult, ToolRegistry
from codeact.contract._json import thaw
from codeact.executors._in_process import InProcessExecutor
from stdlib_bindings import register

SECRET = "outside-secret-31337"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    (tmp_path / "secret.txt").write_text(SECRET)
    (tmp_path / "outside_dir").mkdir()
    (tmp_path / "outside_dir" / "secret.txt").write_text(SECRET)
    return tmp_path


@pytest.fixture
def workspace(outside: Path) -> Path:
    root = outside / "ws"
    (root / "sub").mkdir(parents=True)
    (root / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    (root / "sub" / "code.py").write_text("def f():\n    return 42\n")
    (root / "blob.bin").write_bytes(b"\x00\x01\x02binary")
    os.symlink(outside / "secret.txt", root / "link_file")
    os.symlink(outside / "outside_dir", root / "link_dir")
    os.symlink(root / "loop_b", root / "loop_a")
    os.symlink(root / "loop_a", root / "loop_b")
    return root


@pytest.fixture
def runtime(workspace: Path) -> Iterator[Runtime]:
    registry = ToolRegistry()
    register(registry, workspace=workspace, http_allow=["127.0.0.1:*"], include=["files", "http"])
    made = Runtime(registry, executor=InProcessExecutor())
    yield made
    made.close()


def call(runtime: Runtime, name: str, **arguments: Any) -> ToolExecutionResult:
    return runtime.execute_sync(ToolCall("c", name, arguments), mode=Mode.BOTH)


def test_read_returns_numbered_lines_with_offset_and_limit(runtime: Runtime) -> None:
    result = call(runtime, "read", path="notes.txt", offset=2, limit=1)
    assert result.value == {
        "path": "notes.txt",
        "offset": 2,
        "lines": ("beta",),
        "total_lines": 3,
        "truncated": True,
    }
    assert "     2\tbeta" in result.text
    assert "more lines follow" in result.text


def test_read_refuses_binary_files(runtime: Runtime) -> None:
    result = call(runtime, "read", path="blob.bin")
    assert result.is_error
    assert "binary" in result.text


def test_write_then_edit_then_read(runtime: Runtime, workspace: Path) -> None:
    written = call(runtime, "write", path="new/dir/file.txt", content="one two one")
    assert written.value == {"path": "new/dir/file.txt", "bytes": 11, "created": True}
    assert written.text == "Created new/dir/file.txt (11 bytes)"
    ambiguous = call(runtime, "edit", path="new/dir/file.txt", old="one", new="1")
    assert ambiguous.is_error
    assert "occurs 2 times" in ambiguous.text
    missing = call(runtime, "edit", path="new/dir/file.txt", old="three", new="3")
    assert missing.is_error
    assert "not found" in missing.text
    assert not call(runtime, "edit", path="new/dir/file.txt", old="two", new="2").is_error
    assert (workspace / "new/dir/file.txt").read_text() == "one 2 one"


def test_list_and_grep_stay_inside(runtime: Runtime) -> None:
    listed = call(runtime, "list_files", pattern="**/*")
    assert isinstance(listed.value, tuple)
    assert "sub/code.py" in listed.value
    assert not any("secret" in name for name in listed.value)
    found = call(runtime, "grep", pattern=r"return \d+")
    assert found.value["matches"] == ({"path": "sub/code.py", "line": 2, "text": "    return 42"},)  # type: ignore[index]
    everywhere = call(runtime, "grep", pattern=SECRET)
    assert everywhere.value["matches"] == ()  # type: ignore[index]


ESCAPES = [
    "../secret.txt",
    "../../secret.txt",
    "sub/../../secret.txt",
    "./../secret.txt",
    "sub/./../.././secret.txt",
    "sub/" + "../" * 12 + "secret.txt",
    "{outside}/secret.txt",
    "//{outside}/secret.txt",
    "link_file",
    "link_dir/secret.txt",
    "sub/../link_dir/secret.txt",
    "loop_a",
    "notes.txt\x00/../../secret.txt",
    "%2e%2e/secret.txt",
    "..\\secret.txt",
    "\uff0e\uff0e/secret.txt",
    "..",
    "sub/../..",
]


@pytest.mark.parametrize("shape", ESCAPES)
def test_no_path_escapes_the_workspace(runtime: Runtime, outside: Path, shape: str) -> None:
    path = shape.replace("{outside}", str(outside))
    for name, arguments in (
        ("read", {"path": path}),
        ("grep", {"pattern": "secret", "path": path}),
        ("list_files", {"path": path}),
        ("write", {"path": path + "_written", "content": "x"}),
    ):
        result = call(runtime, name, **arguments)
        assert SECRET not in result.text
    assert sorted(p.name for p in outside.iterdir()) == ["outside_dir", "secret.txt", "ws"]
    assert sorted(p.name for p in (outside / "outside_dir").iterdir()) == ["secret.txt"]


def test_there_are_at_least_fifteen_escape_shapes() -> None:
    assert len(ESCAPES) >= 15


def test_large_reads_are_truncated_visibly(runtime: Runtime, workspace: Path) -> None:
    (workspace / "big.txt").write_text("\n".join(f"line {i} " + "x" * 80 for i in range(5_000)))
    result = call(runtime, "read", path="big.txt")
    assert len(result.value["lines"]) == 2_000  # type: ignore[index, arg-type]
    assert "truncated: showing 20,000 of" in result.text


def test_the_same_tool_gives_the_same_value_natively_and_from_a_script(runtime: Runtime) -> None:
    for name, arguments, script in (
        ("read", {"path": "sub/code.py"}, "read('sub/code.py')"),
        ("grep", {"pattern": "alpha|gamma"}, "grep(pattern='alpha|gamma')"),
        ("list_files", {"pattern": "*.txt"}, "list_files('.', '*.txt')"),
    ):
        native = call(runtime, name, **arguments)
        scripted = call(runtime, "run_code", code=script)
        assert not native.is_error
        assert thaw(native.value) == thaw(scripted.value)["result"]  # type: ignore[index]


class Routes(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        port = self.server.server_address[1]  # type: ignore[index]
        routes: dict[str, tuple[int, dict[str, str], bytes]] = {
            "/json": (200, {"Content-Type": "application/json"}, b'{"answer": 42}'),
            "/text": (200, {"Content-Type": "text/plain"}, b"plain words"),
            "/big": (200, {"Content-Type": "text/plain"}, b"y" * 2_000_000),
            "/hop": (302, {"Location": "/json"}, b""),
            "/out": (302, {"Location": f"http://localhost:{port}/json"}, b""),
            "/loop": (302, {"Location": "/loop"}, b""),
        }
        status, headers, body = routes.get(self.path, (404, {}, b"missing"))
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        data = self.rfile.read(int(self.headers["Content-Length"]))
        body = json.dumps({"got": data.decode(), "header": self.headers.get("X-Test")}).encode()
        self.send_response(201)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Routes)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_fetch_decodes_json_and_text(runtime: Runtime, server: str) -> None:
    result = call(runtime, "fetch", url=f"{server}/json")
    assert result.value["status"] == 200  # type: ignore[index]
    assert result.value["json"] == {"answer": 42}  # type: ignore[index]
    assert call(runtime, "fetch", url=f"{server}/text").value["text"] == "plain words"  # type: ignore[index]


def test_fetch_sends_method_headers_and_body(runtime: Runtime, server: str) -> None:
    result = call(
        runtime,
        "fetch",
        url=f"{server}/echo",
        method="POST",
        headers={"X-Test": "yes"},
        body="hello",
    )
    assert result.value["status"] == 201  # type: ignore[index]
    assert result.value["json"] == {"got": "hello", "header": "yes"}  # type: ignore[index]


def test_fetch_follows_allowed_redirects_and_checks_every_hop(
    runtime: Runtime, server: str
) -> None:
    assert call(runtime, "fetch", url=f"{server}/hop").value["json"] == {"answer": 42}  # type: ignore[index]
    out = call(runtime, "fetch", url=f"{server}/out")
    assert out.is_error
    assert out.error.code == "POLICY_DENIED"
    assert "localhost" in out.text
    loop = call(runtime, "fetch", url=f"{server}/loop")
    assert loop.is_error
    assert "redirects" in loop.text


def test_fetch_refuses_hosts_outside_the_allowlist(runtime: Runtime) -> None:
    result = call(runtime, "fetch", url="http://192.0.2.1/")
    assert result.error.code == "POLICY_DENIED"  # type: ignore[union-attr]
    assert call(runtime, "fetch", url="file:///etc/passwd").error.code == "POLICY_DENIED"  # type: ignore[union-attr]


def test_fetch_bounds_the_body_visibly(runtime: Runtime, server: str) -> None:
    result = call(runtime, "fetch", url=f"{server}/big")
    assert result.value["truncated"] is True  # type: ignore[index]
    assert len(result.value["text"]) == 1_000_000  # type: ignore[index, arg-type]
    assert "truncated" in result.text


def test_shell_asks_first_and_denies_without_an_approver(workspace: Path) -> None:
    registry = ToolRegistry()
    register(registry, workspace=workspace, include=["shell"])
    runtime = Runtime(registry, executor=InProcessExecutor())
    try:
        result = call(runtime, "shell", command="touch should_not_exist")
        assert result.error.code == "POLICY_DENIED"  # type: ignore[union-attr]
        assert not (workspace / "should_not_exist").exists()
    finally:
        runtime.close()


def test_shell_runs_in_the_workspace_with_a_scrubbed_environment(workspace: Path) -> None:
    asked: list[str] = []

    def approve(invocation: Invocation) -> bool:
        asked.append(str(invocation.arguments["command"]))  # type: ignore[index]
        return True

    os.environ["HOST_ONLY_SECRET"] = "shh"
    registry = ToolRegistry()
    register(registry, workspace=workspace, include=["shell"], approver=approve)
    runtime = Runtime(registry, executor=InProcessExecutor())
    try:
        result = call(runtime, "shell", command="pwd; env; echo err >&2; exit 3")
        assert result.value["exit_code"] == 3  # type: ignore[index]
        assert result.value["stdout"].splitlines()[0] == str(workspace)  # type: ignore[index, union-attr]
        assert "HOST_ONLY_SECRET" not in result.value["stdout"]  # type: ignore[index, operator]
        assert result.value["stderr"] == "err\n"  # type: ignore[index]
        slow = call(runtime, "shell", command="sleep 5", timeout=0.3)
        assert slow.value["timed_out"] is True  # type: ignore[index]
        flood = call(runtime, "shell", command="yes | head -c 200000")
        assert flood.value["truncated"] is True  # type: ignore[index]
        assert "truncated" in flood.text
        assert asked[0].startswith("pwd")
    finally:
        del os.environ["HOST_ONLY_SECRET"]
        runtime.close()
