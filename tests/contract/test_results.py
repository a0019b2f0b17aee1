"""Results as programs and people read them: plain JSON data, and a repr that shows it."""

from __future__ import annotations

import json

import anyio

from codeact import ImageBlock, TextBlock, ToolCall, ToolExecutionFailure, ToolRegistry, tool


@tool
def order(items: list[str], rush: bool = False) -> dict[str, object]:
    """Place an order."""
    return {"items": items, "rush": rush, "eta": {"days": 1 if rush else 3}}


def as_picture(arguments: object, value: object) -> list[TextBlock | ImageBlock]:
    return [TextBlock(text="a picture"), ImageBlock(data=str(value), mime_type="image/png")]


@tool(render=as_picture)
def snapshot() -> str:
    """A picture, as base64."""
    return "aGk="


def registry() -> ToolRegistry:
    made = ToolRegistry()
    made.register(order)
    made.register(snapshot)
    return made


def test_to_dict_is_json_data_a_caller_may_change() -> None:
    result = anyio.run(registry().execute, ToolCall("c1", "order", {"items": ["a", "b"]}))
    data = result.to_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["value"] == {"items": ["a", "b"], "rush": False, "eta": {"days": 3}}
    assert data["is_error"] is False
    assert data["text"] == result.text
    data["value"]["items"].append("c")  # a copy: the result itself stays as it was
    assert list(result.value["items"]) == ["a", "b"]  # type: ignore[index, call-overload]


def test_a_failure_to_dict_carries_its_code_and_message() -> None:
    result = anyio.run(registry().execute, ToolCall("c2", "order", {"items": "a"}))
    assert isinstance(result, ToolExecutionFailure)
    data = result.to_dict()
    assert data["error"]["code"] == "INVALID_ARGUMENTS"
    assert data["error"]["message"] == result.error.message
    assert json.loads(json.dumps(data)) == data


def test_the_repr_reads_as_json_data_and_names_media() -> None:
    made = registry()
    ok = anyio.run(made.execute, ToolCall("c1", "order", {"items": ["a"], "rush": True}))
    assert repr(ok) == (
        "ToolExecutionSuccess(call_id='c1', name='order', "
        "value={'items': ['a'], 'rush': True, 'eta': {'days': 1}})"
    )
    failed = anyio.run(made.execute, ToolCall("c2", "nope", {}))
    assert repr(failed).startswith(
        "ToolExecutionFailure(call_id='c2', name='nope', code='UNKNOWN_TOOL', message="
    )
    picture = anyio.run(made.execute, ToolCall("c3", "snapshot", {}))
    assert repr(picture).endswith("media=['image'])")


def test_an_image_is_named_once_in_a_results_text() -> None:
    import base64

    from codeact import ImageBlock, Runtime, ToolCall, tool
    from codeact.executors._in_process import InProcessExecutor

    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"0" * 20).decode()

    @tool
    def snap() -> ImageBlock:
        """Take a picture."""
        return ImageBlock(data=png, mime_type="image/png")

    with Runtime([snap], executor=InProcessExecutor()) as runtime:
        native = runtime.execute_sync(ToolCall("c1", "snap", {}))
        scripted = runtime.execute_sync(ToolCall("c2", "run_code", {"code": "snap()"}))
    for result in (native, scripted):
        assert result.text.count("[image image/png, 30 bytes]") == 1, result.text
        assert any(isinstance(block, ImageBlock) for block in result.content)  # still sent
