"""JSON Schemas for tools: derived from Python types, and checked before use."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonschema
from jsonschema.protocols import Validator
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import CoreSchema

from ._exceptions import ToolDefinitionError
from ._json import JsonValue, NotJsonError, detach

# Keys whose value maps names to sub-schemas (rather than being a schema itself).
_SCHEMA_MAPS = frozenset({"properties", "$defs", "definitions", "patternProperties"})


class CompactJsonSchema(GenerateJsonSchema):
    """Pydantic's generator without the ``title`` noise a model does not need."""

    def generate(self, schema: CoreSchema, mode: Any = "validation") -> JsonSchemaValue:
        generated = super().generate(schema, mode=mode)
        result = strip_titles(generated)
        assert isinstance(result, dict)
        return result


def strip_titles(schema: object) -> object:
    """Remove every ``title`` keyword, keeping properties that happen to be named title."""
    if isinstance(schema, list):
        return [strip_titles(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, object] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: strip_titles(sub) for name, sub in value.items()}
        else:
            out[key] = strip_titles(value)
    return out


def checked_schema(schema: Mapping[str, object], *, what: str) -> dict[str, JsonValue]:
    """A detached copy of ``schema`` once it is proved to be a valid JSON Schema."""
    try:
        plain = detach(schema)
    except NotJsonError as error:
        raise ToolDefinitionError(f"{what} is not plain JSON: {error}") from None
    if not isinstance(plain, dict):
        raise ToolDefinitionError(f"{what} must be a JSON object")
    validator_class = jsonschema.validators.validator_for(
        plain, default=jsonschema.Draft202012Validator
    )
    try:
        validator_class.check_schema(plain)
    except jsonschema.SchemaError as error:
        location = "/".join(str(part) for part in error.path) or "(root)"
        raise ToolDefinitionError(
            f"{what} is not a valid JSON Schema at {location}: {error.message}"
        ) from None
    return plain


def compile_validator(schema: Mapping[str, object]) -> Validator:
    """A validator for a checked schema, built once at definition time."""
    validator_class = jsonschema.validators.validator_for(
        schema, default=jsonschema.Draft202012Validator
    )
    return validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)


# Keywords that never constrain a value.
_ANNOTATIONS = frozenset(
    {
        "description",
        "title",
        "default",
        "examples",
        "$comment",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$schema",
    }
)
# JSON types as jsonschema's default type checker reads them, exact types only: anything
# else (a float that is an integer, a subclass) goes to jsonschema itself.
_EXACT_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
    "object": (dict,),
    "array": (list,),
}


def plainly_valid(schema: object, value: object) -> bool:
    """True when ``value`` certainly satisfies ``schema`` by its simple keywords alone.

    The common case of every call (an object of strings and numbers) checked without
    building jsonschema's error machinery; False means "ask jsonschema", which also
    writes the message, so a keyword this does not know costs time, never correctness.
    """
    if schema is True:
        return True
    if type(schema) is not dict:
        return False
    for key, rule in schema.items():
        if key in _ANNOTATIONS:
            continue
        if key == "type":
            names = [rule] if type(rule) is str else rule
            if type(names) is not list or not any(
                type(value) in _EXACT_TYPES.get(name, ()) for name in names
            ):
                return False
        elif key == "properties":
            if type(value) is dict and type(rule) is dict:
                for name, sub in rule.items():
                    if name in value and not plainly_valid(sub, value[name]):
                        return False
            elif type(rule) is not dict:
                return False
        elif key == "required":
            if type(value) is dict and not all(name in value for name in rule):
                return False
        elif key == "additionalProperties":
            if type(value) is dict:
                known = schema.get("properties", {})
                extra = [v for k, v in value.items() if k not in known]
                if rule is False and extra:
                    return False
                if rule is not False and not all(plainly_valid(rule, v) for v in extra):
                    return False
        elif key == "items":
            if type(value) is list and not all(plainly_valid(rule, item) for item in value):
                return False
        elif key == "enum":
            if type(rule) is not list or not any(
                type(value) is type(option) and value == option for option in rule
            ):
                return False
        else:
            return False
    return True


def describe_errors(
    validator: Validator, instance: object, *, limit: int = 3, schema: object = None
) -> str | None:
    """A message naming where ``instance`` breaks the schema and what was expected.

    With ``schema`` (the validator's own), the simple keywords are checked first.
    """
    if schema is not None and plainly_valid(schema, instance):
        return None
    found: list[jsonschema.ValidationError] = list(validator.iter_errors(instance))  # type: ignore[arg-type]
    errors = sorted(found, key=lambda e: (len(e.path), [str(part) for part in e.path]))
    if not errors:
        return None
    lines = [f"{_path(error.absolute_path)}: {error.message}" for error in errors[:limit]]
    if len(errors) > limit:
        lines.append(f"... and {len(errors) - limit} more")
    return "; ".join(lines)


def _path(parts: object) -> str:
    text = "$"
    for part in parts:  # type: ignore[attr-defined]
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


__all__ = [
    "CompactJsonSchema",
    "checked_schema",
    "compile_validator",
    "describe_errors",
    "strip_titles",
]
