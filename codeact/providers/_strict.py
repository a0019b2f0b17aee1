"""OpenAI's strict mode: the strict form of a parameters schema, when it has one.

Strict mode wants every object closed with every property required. An optional
property therefore becomes required and nullable, and dispatch reads the ``null`` a
strict model sends there as "not given", so the parameter's default applies (see
:func:`codeact.contract._schema.drop_optional_nulls`). The conversion keeps every constraint of
the original, so whatever conforms to the strict form also passes dispatch; a schema
whose meaning strict mode cannot state stays non-strict.
"""

from __future__ import annotations

import copy
from typing import Any

# Keywords strict mode does not take; a schema using one stays non-strict.
_UNSUPPORTED = frozenset(
    {
        "patternProperties",
        "propertyNames",
        "unevaluatedProperties",
        "unevaluatedItems",
        "dependentSchemas",
        "dependentRequired",
        "dependencies",
        "if",
        "then",
        "else",
        "not",
        # "exactly one of" is not "any of": turning one into the other lets through a
        # value that matches two branches, which the original refuses.
        "oneOf",
        "prefixItems",
        "contains",
    }
)
# Annotations strict mode refuses or ignores; they never constrain a value.
_DROPPED = frozenset({"default", "title", "examples", "$schema", "$id", "$comment"})
# What a schema must say for strict mode to know its shape.
_SHAPES = frozenset({"type", "anyOf", "$ref", "enum", "const"})


class _NotStrict(Exception):
    pass


def to_strict(parameters: Any) -> dict[str, Any] | None:
    """The strict-mode form of a parameters schema, or None when it has none."""
    if not isinstance(parameters, dict):
        return None
    root = copy.deepcopy(parameters)
    try:
        converted = _Converter(root).convert(root, optional=False)
    except _NotStrict:
        return None
    return converted if isinstance(converted, dict) else None


class _Converter:
    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.inlining: list[str] = []

    def convert(self, schema: Any, *, optional: bool) -> dict[str, Any]:
        if not isinstance(schema, dict):
            raise _NotStrict  # `true`/`false` schemas have no strict form
        if _UNSUPPORTED & schema.keys():
            raise _NotStrict
        out = {key: value for key, value in schema.items() if key not in _DROPPED}
        if "$ref" in out and len(out) > 1:
            out = self._inline(out)
        if "allOf" in out:
            out = self._merge_single(out)
        for defs in ("$defs", "definitions"):
            if isinstance(out.get(defs), dict):
                out[defs] = {
                    name: self.convert(sub, optional=False) for name, sub in out[defs].items()
                }
        if schema is not self.root and not (_SHAPES & out.keys()):
            raise _NotStrict  # "any value" has no strict form
        if "anyOf" in out:
            out["anyOf"] = [self.convert(option, optional=False) for option in out["anyOf"]]
        if "items" in out:
            out["items"] = self.convert(out["items"], optional=False)
        if out.get("type") == "object" or "properties" in out:
            self._close(out)
        return _nullable(out) if optional else out

    def _close(self, out: dict[str, Any]) -> None:
        if out.get("additionalProperties") not in (None, False):
            raise _NotStrict  # an open map has no strict form
        if "minProperties" in out or "maxProperties" in out:
            raise _NotStrict  # every property is required: a count would be a contradiction
        properties = out.get("properties", {})
        if not isinstance(properties, dict):
            raise _NotStrict
        required = set(out.get("required", []))
        out["properties"] = {
            name: self.convert(sub, optional=name not in required)
            for name, sub in properties.items()
        }
        out["required"] = list(properties)
        out["additionalProperties"] = False

    def _inline(self, schema: dict[str, Any]) -> dict[str, Any]:
        """A ``$ref`` with siblings, replaced by what it points to (strict mode takes a
        reference only alone); the siblings win, as the SDK's conversion does."""
        ref = schema["$ref"]
        if not isinstance(ref, str) or ref in self.inlining:
            raise _NotStrict  # a recursive reference cannot be inlined
        target = self._resolve(ref)
        self.inlining.append(ref)
        try:
            siblings = {key: value for key, value in schema.items() if key != "$ref"}
            return self.convert({**target, **siblings}, optional=False)
        finally:
            self.inlining.pop()

    def _resolve(self, ref: str) -> dict[str, Any]:
        if not ref.startswith("#/"):
            raise _NotStrict  # only local references can be inlined
        target: Any = self.root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, dict) or part not in target:
                raise _NotStrict
            target = target[part]
        if not isinstance(target, dict):
            raise _NotStrict
        return copy.deepcopy(target)

    def _merge_single(self, schema: dict[str, Any]) -> dict[str, Any]:
        """``allOf`` of one schema is that schema; of more, closing each branch would
        refuse every value that needs two of them."""
        options = schema["allOf"]
        if not isinstance(options, list) or len(options) != 1:
            raise _NotStrict
        rest = {key: value for key, value in schema.items() if key != "allOf"}
        (only,) = options
        if not isinstance(only, dict) or rest.keys() & only.keys() - {"description"}:
            raise _NotStrict
        return {**only, **rest}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` that also accepts null, the strict spelling of "not given"."""
    kind = schema.get("type")
    simple = "enum" not in schema and "const" not in schema
    if simple and isinstance(kind, str):
        return schema if kind == "null" else {**schema, "type": [kind, "null"]}
    if simple and isinstance(kind, list):
        return schema if "null" in kind else {**schema, "type": [*kind, "null"]}
    if "anyOf" in schema and len(schema) == 1:
        if any(option.get("type") == "null" for option in schema["anyOf"]):
            return schema
        return {"anyOf": [*schema["anyOf"], {"type": "null"}]}
    wrapped: dict[str, Any] = {"anyOf": [schema, {"type": "null"}]}
    if "description" in schema:  # kept where a reader looks for it
        wrapped = {"description": schema["description"], **wrapped}
        wrapped["anyOf"][0] = {k: v for k, v in schema.items() if k != "description"}
    return wrapped


__all__ = ["to_strict"]
