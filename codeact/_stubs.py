"""Tools as Python signatures: how code mode presents the bound tools to a model."""

from __future__ import annotations

import json
import keyword
from collections.abc import Mapping, Sequence
from typing import Any

from ._tool import Tool

TRIPLE = '"' * 3
SINGLE_TRIPLE = "'" * 3
_SIMPLE = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}


def python_type(schema: Any, defs: Mapping[str, Any] | None = None, depth: int = 0) -> str:
    """A Python annotation that reads like ``schema`` (best effort, never raises)."""
    if not isinstance(schema, dict) or depth > 6:
        return "Any"
    defs = defs or {}
    if "$ref" in schema and isinstance(schema["$ref"], str):
        name = schema["$ref"].rsplit("/", 1)[-1]
        return name if name.isidentifier() else "dict"
    if "enum" in schema and isinstance(schema["enum"], list):
        return "Literal[" + ", ".join(json.dumps(v) for v in schema["enum"][:20]) + "]"
    if "const" in schema:
        return f"Literal[{json.dumps(schema['const'])}]"
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            names = dict.fromkeys(python_type(o, defs, depth + 1) for o in options)
            return " | ".join(names)
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(
            dict.fromkeys(python_type({**schema, "type": k}, defs, depth + 1) for k in kind)
        )
    if kind in _SIMPLE:
        return _SIMPLE[kind]
    if kind == "array":
        return f"list[{python_type(schema.get('items'), defs, depth + 1)}]"
    if kind == "object" or "properties" in schema:
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict) and not schema.get("properties"):
            return f"dict[str, {python_type(extra, defs, depth + 1)}]"
        return "dict"
    return "Any"


def signature(tool: Tool, called: str | None = None) -> str:
    """``def name(a: int, b: str = "x") -> ReturnType:`` for one tool (``called``: the name
    scripts call it by, when that is not its own)."""
    properties = tool.parameters.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = tool.parameters.get("required")
    required_names = set(required) if isinstance(required, list) else set()
    defs = tool.parameters.get("$defs")
    defs = defs if isinstance(defs, dict) else {}
    parts = []
    for name, schema in properties.items():
        if not name.isidentifier() or keyword.iskeyword(name):
            continue
        annotation = python_type(schema, defs)
        if name in required_names:
            parts.append(f"{name}: {annotation}")
        elif isinstance(schema, dict) and "default" in schema:
            parts.append(f"{name}: {annotation} = {_literal(schema['default'])}")
        else:
            parts.append(f"{name}: {annotation} | None = None")
    returns = "Any" if tool.output_schema is None else python_type(tool.output_schema)
    required_first = sorted(parts, key=lambda p: "=" in p)
    return f"def {called or tool.name}({', '.join(required_first)}) -> {returns}:"


def stub(tool: Tool, called: str | None = None) -> str:
    """A tool's signature with its docstring, as Python source (``called``: as signature's)."""
    doc = tool.description.strip().replace(TRIPLE, SINGLE_TRIPLE) or "(no description)"
    if called is not None and called != tool.name:
        doc += f"\n\n(The tool {tool.name!r}, by the name scripts call it.)"
    lines = doc.splitlines()
    head = signature(tool, called)
    if len(lines) == 1:
        return f"{head}\n    {TRIPLE}{doc}{TRIPLE}"
    body = "\n".join(f"    {line}" if line else "" for line in lines[1:])
    return f"{head}\n    {TRIPLE}{lines[0]}\n{body}\n    {TRIPLE}"


def stubs(tools: Sequence[Tool] | Mapping[str, Tool]) -> str:
    """Every tool's stub, in registry order; a mapping gives the names scripts use."""
    named = tools if isinstance(tools, Mapping) else {t.name: t for t in tools}
    return "\n\n".join(stub(tool, name) for name, tool in named.items() if name.isidentifier())


def _literal(value: Any) -> str:
    if value is None or isinstance(value, bool | int | float | str):
        return repr(value)
    return "..."


__all__ = ["python_type", "signature", "stub", "stubs"]
