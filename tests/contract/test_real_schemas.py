"""Real published schemas: the function definitions of the Berkeley Function Calling
Leaderboard (live categories, contributed from real APIs), read from the bfcl-eval package.

Each schema is refused as published (its Python type names are not JSON Schema) with a
message naming the problem; converted from that dialect, each is registered, advertised in
every provider format, validated against an instance built from it, and a call missing a
required argument is refused with a message naming it.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from codeact import Tool, ToolCall, ToolDefinitionError, ToolRegistry
from codeact.contract._dialects import from_bfcl
from codeact.providers._formats import (
    anthropic_tools,
    openai_chat_tools,
    openai_responses_tools,
    to_strict,
)

FILES = (
    "BFCL_v4_live_simple.json",
    "BFCL_v4_live_multiple.json",
    "BFCL_v4_live_parallel_multiple.json",
)
SAMPLES = {
    "string": "x",
    "integer": 1,
    "number": 1.5,
    "boolean": True,
    "array": [],
    "object": {},
    "null": None,
}
FORMATS = {
    "date": "2024-01-01",
    "date-time": "2024-01-01T00:00:00Z",
    "email": "a@example.com",
    "uri": "https://example.com",
}


# The bfcl-eval package's files, unpacked beside the environment (``make`` puts them there)
# rather than installed into it: it is data here, and its own requirements are not needed.
TEST_DATA = Path(
    os.environ.get("CODEACT_TEST_DATA", Path(__file__).resolve().parents[2] / ".venv" / "test-data")
)


def published() -> list[dict[str, Any]]:
    data = TEST_DATA / "bfcl_eval" / "data"
    if not data.is_dir():
        spec = importlib.util.find_spec("bfcl_eval")  # an environment that installed it
        if spec is None or not spec.submodule_search_locations:
            pytest.skip("bfcl-eval (test data) is not unpacked: run make")
        data = Path(next(iter(spec.submodule_search_locations))) / "data"
    unique: dict[str, dict[str, Any]] = {}
    for name in FILES:
        for line in (data / name).read_text().splitlines():
            for function in json.loads(line)["function"]:
                unique.setdefault(json.dumps(function, sort_keys=True), function)
    return list(unique.values())


def sample(schema: Any) -> Any:
    """A value the schema accepts, built from its type, enum, format and required fields."""
    if not isinstance(schema, dict):
        return "x"
    if schema.get("enum"):
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) else kind
    if kind == "object":
        properties = schema.get("properties") or {}
        return {name: sample(properties.get(name, {})) for name in schema.get("required", [])}
    if kind == "string" and schema.get("format") in FORMATS:
        return FORMATS[schema["format"]]
    return SAMPLES.get(kind, "x")


def test_at_least_two_hundred_published_schemas_are_advertised_and_validated() -> None:
    functions = published()
    assert len(functions) >= 200
    accepted = checked = 0
    for number, function in enumerate(functions):
        name = f"f{number}"
        with pytest.raises(ToolDefinitionError, match=r"not a valid JSON Schema|object schema"):
            Tool.from_schema(
                name=name, description="", parameters=function["parameters"], function=dict
            )
        parameters = from_bfcl(function["parameters"])
        tool = Tool.from_schema(
            name=name,
            description=function.get("description", ""),
            parameters=parameters,
            function=lambda **kw: kw,
        )
        accepted += 1
        registry = ToolRegistry()
        registry.register(tool)
        (advertised,) = registry.schemas()
        assert advertised["parameters"] == parameters
        assert openai_chat_tools([advertised], strict=True)[0]["function"]["name"] == name
        assert openai_responses_tools([advertised])[0]["name"] == name
        assert anthropic_tools([advertised])[0]["input_schema"] == parameters
        strict = to_strict(parameters)
        assert strict is None or strict["additionalProperties"] is False
        instance = sample(parameters)
        if not tool.parameter_validator.is_valid(instance):
            continue  # constraints the simple sampler does not meet (or, in a few, none can)
        result = anyio.run(registry.execute, ToolCall("c", name, instance))
        assert not result.is_error, (function["name"], result.text)
        required = parameters.get("required") or []
        if required:
            missing = dict(instance)
            missing.pop(required[0])
            refused_call = anyio.run(registry.execute, ToolCall("c", name, missing))
            assert refused_call.error.code == "INVALID_ARGUMENTS"  # type: ignore[union-attr]
            assert required[0] in refused_call.text
        checked += 1
    assert accepted == len(functions)  # every converted schema is a valid JSON Schema
    assert accepted >= 200
    assert checked >= 200, (accepted, checked)
