"""Tools as Python signatures: how code mode presents the bound tools to a model."""

from __future__ import annotations

import json
import keyword
from collections.abc import Mapping, Sequence
from typing import Any

from ..contract._tool import Tool

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


def signature(tool: Tool, called: str | None = None, returns: str | None = None) -> str:
    """``def name(a: int, b: str = "x") -> ReturnType:`` for one tool (``called``: the name
    scripts call it by, when that is not its own; ``returns``: a return annotation)."""
    properties = _properties(tool.parameters)
    required = tool.parameters.get("required")
    required_names = set(required) if isinstance(required, list) else set()
    defs = tool.parameters.get("$defs")
    defs = defs if isinstance(defs, dict) else {}
    parts = []
    for name, schema in properties.items():
        if not _field_name(name):
            continue
        annotation = python_type(schema, defs)
        if name in required_names:
            parts.append(f"{name}: {annotation}")
        elif isinstance(schema, dict) and "default" in schema:
            parts.append(f"{name}: {annotation} = {_literal(schema['default'])}")
        else:
            parts.append(f"{name}: {annotation} | None = None")
    if returns is None:
        returns = "Any" if tool.output_schema is None else python_type(tool.output_schema)
    required_first = sorted(parts, key=lambda p: "=" in p)
    return f"def {called or tool.name}({', '.join(required_first)}) -> {returns}:"


def result_class(tool: Tool, called: str | None = None) -> tuple[str, str] | None:
    """A ``TypedDict`` for an object output schema (the shape a model reads): its name and
    source; None for any other output."""
    schema = tool.output_schema
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return None
    properties = _properties(schema)
    if not properties or not all(_field_name(name) for name in properties):
        return None
    required = schema.get("required")
    required_names = set(required) if isinstance(required, list) else set()
    defs = schema.get("$defs")
    defs = defs if isinstance(defs, dict) else {}
    name = "".join(part.capitalize() for part in (called or tool.name).split("_")) + "Result"
    lines = [f"class {name}(TypedDict):"]
    for field, field_schema in properties.items():
        annotation = python_type(field_schema, defs)
        if field not in required_names:
            annotation = f"NotRequired[{annotation}]"
        about = field_schema.get("description") if isinstance(field_schema, dict) else None
        comment = f"  # {_one_line(str(about))}" if about else ""
        lines.append(f"    {field}: {annotation}{comment}")
    return name, "\n".join(lines)


def defined_types(tool: Tool) -> list[str]:
    """Each ``$defs`` entry the tool's schemas refer to, as Python source, the ones it
    uses first: an object as a ``TypedDict``, anything else as an alias."""
    roots = [s for s in (tool.parameters, tool.output_schema) if isinstance(s, dict)]
    defs: dict[str, Any] = {}
    for root in roots:
        found = root.get("$defs")
        if isinstance(found, dict):
            defs.update(found)
    ordered: list[str] = []

    def visit(schema: Any, depth: int = 0) -> None:
        if depth > 20:
            return
        if isinstance(schema, dict):
            ref = schema.get("$ref")
            if isinstance(ref, str):
                name = ref.rsplit("/", 1)[-1]
                if name in defs and name not in ordered and name.isidentifier():
                    ordered.append(name)  # marked first: a cycle ends here
                    visit(defs[name], depth + 1)
                    ordered.append(ordered.pop(ordered.index(name)))  # after what it uses
            for key, inner in schema.items():
                if key != "$defs":
                    visit(inner, depth + 1)
        elif isinstance(schema, list):
            for inner in schema:
                visit(inner, depth + 1)

    for root in roots:
        visit(root)
    return [_defined(name, defs[name], defs) for name in ordered]


def _defined(name: str, schema: Any, defs: Mapping[str, Any]) -> str:
    properties = _properties(schema) if isinstance(schema, dict) else {}
    if not properties or not all(_field_name(field) for field in properties):
        return f"{name} = {python_type(schema, defs)}"
    required = schema.get("required")
    required_names = set(required) if isinstance(required, list) else set()
    lines = [f"class {name}(TypedDict):"]
    for field, field_schema in properties.items():
        annotation = python_type(field_schema, defs)
        if field not in required_names:
            annotation = f"NotRequired[{annotation}]"
        lines.append(f"    {field}: {annotation}")
    return "\n".join(lines)


def stub(tool: Tool, called: str | None = None, shown: set[str] | None = None) -> str:
    """A tool's signature with its docstring, as Python source (``called``: as signature's):
    the description, ``Args:`` from the parameters' descriptions, ``Returns:`` from the
    output schema's; an object result comes first as its ``TypedDict``."""
    doc = tool.description.strip() or "(no description)"
    if called is not None and called != tool.name:
        doc += f"\n\n(The tool {tool.name!r}, by the name scripts call it.)"
    described = {
        name: _one_line(str(schema["description"]))
        for name, schema in _properties(tool.parameters).items()
        if _field_name(name) and isinstance(schema, dict) and schema.get("description")
    }
    if described:
        doc += "\n\nArgs:\n" + "\n".join(f"    {name}: {text}" for name, text in described.items())
    output = tool.output_schema
    if isinstance(output, dict) and output.get("description"):
        doc += f"\n\nReturns:\n    {_one_line(str(output['description']))}"
    elif isinstance(output, dict) and _is_bytes(output):
        doc += "\n\nReturns:\n    bytes, as base64 text (base64.b64decode gives them back)"
    typed = result_class(tool, called)
    head = signature(tool, called, typed[0] if typed else None)
    lines = doc.replace(TRIPLE, SINGLE_TRIPLE).splitlines()
    if len(lines) == 1:
        source = f"{head}\n    {TRIPLE}{lines[0]}{TRIPLE}"
    else:
        body = "\n".join(f"    {line}" if line else "" for line in lines[1:])
        source = f"{head}\n    {TRIPLE}{lines[0]}\n{body}\n    {TRIPLE}"
    types_ = [t for t in defined_types(tool) if shown is None or t not in shown]
    if shown is not None:
        shown.update(types_)
    return "\n\n".join([*types_, *([typed[1]] if typed else []), source])


def _is_bytes(schema: Mapping[str, Any]) -> bool:
    """A string schema for bytes (pydantic says ``format: binary``), sent as base64."""
    return schema.get("type") == "string" and (
        schema.get("format") in ("binary", "base64") or schema.get("contentEncoding") == "base64"
    )


def _properties(schema: Mapping[str, Any]) -> dict[str, Any]:
    properties = schema.get("properties")
    return properties if isinstance(properties, dict) else {}


def _field_name(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def stubs(tools: Sequence[Tool] | Mapping[str, Tool]) -> str:
    """Every tool's stub, in registry order; a mapping gives the names scripts use."""
    named = tools if isinstance(tools, Mapping) else {t.name: t for t in tools}
    shown: set[str] = set()  # a type two tools share is defined once
    return "\n\n".join(
        stub(tool, name, shown) for name, tool in named.items() if name.isidentifier()
    )


def _literal(value: Any) -> str:
    if value is None or isinstance(value, bool | int | float | str):
        return repr(value)
    return "..."


__all__ = ["python_type", "result_class", "signature", "stub", "stubs"]
