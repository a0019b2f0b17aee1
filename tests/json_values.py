"""Hypothesis strategies for the values a JSON Schema accepts, over the subset strict
mode uses (types, enums, constants, anyOf, local references, closed objects, arrays and
the common string and number bounds).

hypothesis-jsonschema would be the library for this, but its last release reaches into
Hypothesis internals that have since changed; every drawn value is still checked
against the schema by jsonschema, so what this does not model is filtered, not trusted.
"""

from __future__ import annotations

from typing import Any

import jsonschema
from hypothesis import strategies as st

FORMATS = {
    "date": st.dates().map(str),
    "date-time": st.datetimes().map(lambda moment: moment.isoformat() + "Z"),
    "time": st.times().map(lambda moment: moment.isoformat() + "Z"),
    "email": st.from_regex(r"\A[a-z]{1,8}@[a-z]{1,8}\.com\Z"),
    "uri": st.from_regex(r"\Ahttps://[a-z]{1,8}\.com/[a-z]{0,8}\Z"),
}


class NoValue(Exception):
    """The schema accepts nothing (a published schema can: an enum of strings on an array)."""


JSON_TYPES: dict[str, tuple[type, ...]] = {
    "null": (type(None),),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
    "string": (str,),
    "array": (list,),
    "object": (dict,),
}


def values(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values ``schema`` accepts; raises NoValue when it plainly accepts none."""
    validator = jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )
    return _values(schema, schema, depth=0).filter(validator.is_valid)


def _values(schema: Any, root: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
    if schema is True or schema == {}:
        return st.none() | st.integers() | st.text(max_size=5)
    if "$ref" in schema:
        return _values(_resolve(root, schema["$ref"]), root, depth + 1)
    if "const" in schema:
        return st.just(schema["const"])
    kinds = schema.get("type", list(JSON_TYPES) if "enum" in schema else "object")
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if "enum" in schema:
        wanted = tuple(kind for name in kinds for kind in JSON_TYPES[name])
        options = [
            option
            for option in schema["enum"]
            if isinstance(option, wanted) and not (isinstance(option, bool) and bool not in wanted)
        ]
        if not options:
            raise NoValue(f"no value of {schema['enum']} is of type {kinds}")
        return st.sampled_from(options)
    if "anyOf" in schema:
        options = []
        for option in schema["anyOf"]:
            try:
                options.append(_values(option, root, depth + 1))
            except NoValue:
                continue
        if not options:
            raise NoValue("no option of anyOf accepts a value")
        return st.one_of(options)
    if depth > 4:  # deep enough: prefer the kinds that end the recursion
        kinds = [kind for kind in kinds if kind not in ("object", "array")] or kinds
    return st.one_of([_of_kind(kind, schema, root, depth) for kind in kinds])


def _of_kind(kind: str, schema: dict[str, Any], root: dict[str, Any], depth: int) -> Any:
    if kind == "null":
        return st.none()
    if kind == "boolean":
        return st.booleans()
    if kind == "integer":
        return st.integers(
            min_value=_bound(schema, "minimum", "exclusiveMinimum", 1),
            max_value=_bound(schema, "maximum", "exclusiveMaximum", -1),
        )
    if kind == "number":
        return st.floats(
            min_value=schema.get("minimum"),
            max_value=schema.get("maximum"),
            allow_nan=False,
            allow_infinity=False,
        )
    if kind == "string":
        if schema.get("format") in FORMATS:
            return FORMATS[schema["format"]]
        if "pattern" in schema:  # JSON Schema patterns search, as from_regex's do
            # but an ECMA-262 `$` does not match before a final newline, as Python's does
            return st.from_regex(schema["pattern"]).filter(lambda text: "\n" not in text)
        return st.text(min_size=schema.get("minLength", 0), max_size=schema.get("maxLength", 12))
    if kind == "array":
        return st.lists(
            _values(schema.get("items", True), root, depth + 1),
            min_size=schema.get("minItems", 0),
            max_size=schema.get("maxItems", 3),
        )
    properties = schema.get("properties", {})
    required = set(schema.get("required", []))
    given: dict[str, st.SearchStrategy[Any]] = {}
    optional: dict[str, st.SearchStrategy[Any]] = {}
    for name, sub in properties.items():
        try:
            (given if name in required else optional)[name] = _values(sub, root, depth + 1)
        except NoValue:
            if name in required:
                raise
    return st.fixed_dictionaries(given, optional=optional)


def _bound(schema: dict[str, Any], inclusive: str, exclusive: str, step: int) -> int | None:
    if inclusive in schema:
        return int(schema[inclusive])
    if exclusive in schema:
        return int(schema[exclusive]) + step
    return None


def _resolve(root: dict[str, Any], ref: str) -> Any:
    target: Any = root
    for part in ref.removeprefix("#/").split("/"):
        if part:
            target = target[part]
    return target
