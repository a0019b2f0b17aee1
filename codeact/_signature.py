"""Deriving a tool's schemas and argument binder from a typed Python signature."""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, PydanticUserError, TypeAdapter, create_model

from ._docstring import parse_docstring
from ._exceptions import ToolDefinitionError
from ._json import JsonValue
from ._schema import CompactJsonSchema

_NO_OUTPUT = (None, type(None), Any, inspect.Signature.empty)


@dataclass(frozen=True, kw_only=True, slots=True)
class DerivedSignature:
    """What a function's signature and docstring say about it as a tool."""

    description: str
    parameters: dict[str, JsonValue]
    output_schema: dict[str, JsonValue] | None
    bind: Callable[[dict[str, JsonValue]], dict[str, Any]]


def derive_signature(fn: Callable[..., Any]) -> DerivedSignature:
    """Schemas and a binder for ``fn``; a clear :class:`ToolDefinitionError` otherwise."""
    label = getattr(fn, "__qualname__", repr(fn))
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as error:  # an unresolvable annotation can raise anything
        raise ToolDefinitionError(f"{label}: cannot resolve its annotations: {error}") from None
    doc = parse_docstring(inspect.getdoc(fn))
    fields: dict[str, Any] = {}
    for parameter in inspect.signature(fn).parameters.values():
        fields[parameter.name] = _field(label, parameter, hints, doc.params.get(parameter.name))
    model = _arguments_model(label, fields)
    kinds = {name: _taken_as_is(hints[name]) for name in fields}
    as_is = None if any(k is None for k in kinds.values()) else kinds
    return DerivedSignature(
        description=doc.description or label,
        parameters=_model_schema(label, model),
        output_schema=_described(
            _output_schema(label, hints.get("return", inspect.Signature.empty)), doc.returns
        ),
        bind=_binder(model, as_is),  # type: ignore[arg-type]
    )


def _field(
    label: str, parameter: inspect.Parameter, hints: dict[str, Any], description: str | None
) -> tuple[Any, Any]:
    name = parameter.name
    if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
        raise ToolDefinitionError(f"{label}: *{name} has no JSON Schema form; name each parameter")
    if parameter.kind is inspect.Parameter.POSITIONAL_ONLY:
        raise ToolDefinitionError(
            f"{label}: positional-only parameter {name!r} cannot be passed by name"
        )
    if name.startswith("_"):
        raise ToolDefinitionError(f"{label}: parameter {name!r} must not start with '_'")
    if name not in hints:
        raise ToolDefinitionError(f"{label}: parameter {name!r} has no type annotation")
    default = ... if parameter.default is inspect.Parameter.empty else parameter.default
    return (Annotated[hints[name], Field(description=description)], default)


def _arguments_model(label: str, fields: dict[str, Any]) -> type[BaseModel]:
    try:
        return create_model(f"{label}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
    except (PydanticUserError, TypeError, NameError) as error:
        raise ToolDefinitionError(f"{label}: {_first_bad_field(fields) or error}") from None


def _model_schema(label: str, model: type[BaseModel]) -> dict[str, JsonValue]:
    try:
        schema = model.model_json_schema(schema_generator=CompactJsonSchema)
    except PydanticUserError as error:
        raise ToolDefinitionError(
            f"{label}: {_first_bad_field(dict(model.model_fields)) or error}"
        ) from None
    schema.setdefault("properties", {})
    return schema


def _first_bad_field(fields: dict[str, Any]) -> str | None:
    for name, spec in fields.items():
        annotation: Any = spec[0] if isinstance(spec, tuple) else getattr(spec, "annotation", spec)
        if typing.get_origin(annotation) is Annotated:
            annotation = typing.get_args(annotation)[0]
        try:
            TypeAdapter(annotation).json_schema()
        except Exception as error:  # which field pydantic choked on, for the message
            reason = str(error).splitlines()[0]
            return f"parameter {name!r}: {annotation!r} has no JSON Schema: {reason}"
    return None


def _output_schema(label: str, annotation: Any) -> dict[str, JsonValue] | None:
    if annotation in _NO_OUTPUT:
        return None
    try:
        schema = TypeAdapter(annotation).json_schema(schema_generator=CompactJsonSchema)
    except Exception as error:  # pydantic raises several unrelated types here
        reason = str(error).splitlines()[0]
        raise ToolDefinitionError(
            f"{label}: return annotation {annotation!r} has no JSON Schema: {reason}"
        ) from None
    return schema or None


def _described(
    schema: dict[str, JsonValue] | None, text: str | None
) -> dict[str, JsonValue] | None:
    """The docstring's ``Returns:`` text as the output schema's description."""
    if schema is None or not text or "description" in schema:
        return schema
    return {**schema, "description": text}


# Annotations whose values pydantic returns unchanged when they have these exact types.
_AS_IS: dict[Any, frozenset[type]] = {
    str: frozenset({str}),
    int: frozenset({int}),
    bool: frozenset({bool}),
    float: frozenset({float}),
}


def _taken_as_is(annotation: Any) -> frozenset[type] | None:
    """The exact types a parameter annotated so receives as they are (pydantic would hand
    back the same value), or None: pydantic converts or checks more than the type."""
    found = _AS_IS.get(annotation)
    if found is not None:
        return found
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        parts = [_AS_IS.get(part) for part in typing.get_args(annotation)]
        plain = [part for part in parts if part is not None]
        nones = [part for part in typing.get_args(annotation) if part is type(None)]
        if len(plain) + len(nones) == len(parts) and len(plain) == 1:  # X | None
            return plain[0] | ({type(None)} if nones else set())
    return None


def _binder(
    model: type[BaseModel], as_is: dict[str, frozenset[type]] | None
) -> Callable[[dict[str, JsonValue]], dict[str, Any]]:
    names = tuple(model.model_fields)

    def bind(arguments: dict[str, JsonValue]) -> dict[str, Any]:
        if as_is is not None and all(
            type(value) in as_is.get(name, ()) for name, value in arguments.items()
        ):  # already what the function takes: absent ones get the function's defaults
            return arguments
        instance = model.model_validate(arguments)
        return {name: getattr(instance, name) for name in names}

    return bind


__all__ = ["DerivedSignature", "derive_signature"]
