"""Schema dialects: parameter schemas written in near-JSON-Schema, converted to the real thing.

The Berkeley Function Calling Leaderboard (and tools written for it) use Python type
names: ``dict``, ``float``, ``tuple``, ``any``. ``from_bfcl`` turns them into JSON Schema
so the registry can check, validate and advertise them; unconverted, the registry
refuses them with a message naming the offending type.
"""

from __future__ import annotations

from typing import Any

_TYPES = {"dict": "object", "float": "number", "tuple": "array", "list": "array", "int": "integer",
          "str": "string", "bool": "boolean"}  # fmt: skip
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")


def from_bfcl(schema: Any) -> Any:
    """A JSON Schema for a BFCL-dialect schema (other values are returned converted in place)."""
    if isinstance(schema, list):
        return [from_bfcl(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type":
            converted = _type(value)
            if converted is not None:
                out["type"] = converted
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: from_bfcl(sub) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS or key in ("items", "additionalProperties", "not"):
            out[key] = from_bfcl(value)
        else:
            out[key] = value
    return out


def _type(value: Any) -> Any:
    if isinstance(value, list):
        kinds = [k for k in (_type(v) for v in value) if k is not None]
        return kinds or None
    if value == "any":
        return None
    return _TYPES.get(value, value)


__all__ = ["from_bfcl"]
