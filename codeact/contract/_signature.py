"""Deriving a tool's schemas and argument binder from a typed Python signature."""

from __future__ import annotations

import functools
import inspect
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from ._docstring import parse_docstring
from ._exceptions import ToolDefinitionError
from ._json import JsonValue
from ._schema import strip_titles

if TYPE_CHECKING:  # pydantic is loaded for the signatures that need it
    from pydantic import BaseModel
    from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
    from pydantic_core import CoreSchema

_NO_OUTPUT = (None, type(None), Any, inspect.Signature.empty)


@dataclass(frozen=True, kw_only=True, slots=True)
class DerivedSignature:
    """What a function's signature and docstring say about it as a tool."""

    description: str
    parameters: dict[str, JsonValue]
    output_schema: dict[str, JsonValue] | None
    bind: Callable[[dict[str, JsonValue]], dict[str, Any]]


def derive_signature(fn: Callable[..., Any]) -> DerivedSignature:
    """Schemas and a binder for ``fn``; a clear :class:`ToolDefinitionError` otherwise.

    A signature of JSON scalars (``str``, ``int``, ``float``, ``bool``, each optional or
    not, with defaults of their own type) and such a return is read without pydantic,
    to the same schemas pydantic writes; pydantic is loaded for anything else, and for
    such a tool only when a call's arguments need converting (``3.0`` for an ``int``).
    """
    label = getattr(fn, "__qualname__", repr(fn))
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as error:  # an unresolvable annotation can raise anything
        raise ToolDefinitionError(f"{label}: cannot resolve its annotations: {error}") from None
    doc = parse_docstring(inspect.getdoc(fn))
    parameters = list(inspect.signature(fn).parameters.values())
    for parameter in parameters:
        _check_parameter(label, parameter, hints)
    returned = hints.get("return", inspect.Signature.empty)
    plainly = returned in _NO_OUTPUT or _scalar(returned) is not None
    output = _described(
        _scalar_output(returned) if plainly else _output_schema(label, returned), doc.returns
    )

    def fields() -> dict[str, Any]:
        return {p.name: _field(p, hints, doc.params.get(p.name)) for p in parameters}

    scalars = _scalar_parameters(parameters, hints, doc.params)
    if scalars is not None:
        schema, kinds = scalars
        return DerivedSignature(
            description=doc.description or label,
            parameters=schema,
            output_schema=output,
            bind=_binder(lambda: _arguments_model(label, fields()), kinds),
        )
    model = _arguments_model(label, fields())
    return DerivedSignature(
        description=doc.description or label,
        parameters=_model_schema(label, model),
        output_schema=output,
        bind=_binder(lambda: model, None),
    )


def _check_parameter(label: str, parameter: inspect.Parameter, hints: dict[str, Any]) -> None:
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


def _field(
    parameter: inspect.Parameter, hints: dict[str, Any], description: str | None
) -> tuple[Any, Any]:
    from pydantic import Field

    default = ... if parameter.default is inspect.Parameter.empty else parameter.default
    return (Annotated[hints[parameter.name], Field(description=description)], default)


# JSON scalars: what pydantic writes for each, and the exact types it hands on unchanged.
_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _scalar(annotation: Any) -> tuple[dict[str, JsonValue], frozenset[type]] | None:
    """A JSON scalar's schema (or an optional one's), with the exact types a value of it
    has when no conversion is needed; None for any other annotation."""
    try:
        name = _SCALARS.get(annotation)
    except TypeError:  # an annotation that is not even hashable: pydantic says what is wrong
        return None
    if name is not None:
        return {"type": name}, frozenset({annotation})
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        parts = typing.get_args(annotation)
        if len(parts) == 2 and type(None) in parts:
            (kind,) = [part for part in parts if part is not type(None)]
            name = _SCALARS.get(kind)
            if name is not None:
                branches: list[JsonValue] = [
                    {"type": "null"} if part is type(None) else {"type": name} for part in parts
                ]
                return {"anyOf": branches}, frozenset({kind, type(None)})
    return None


def _scalar_output(annotation: Any) -> dict[str, JsonValue] | None:
    found = None if annotation in _NO_OUTPUT else _scalar(annotation)
    return None if found is None else found[0]


def _scalar_parameters(
    parameters: list[inspect.Parameter], hints: dict[str, Any], described: dict[str, str]
) -> tuple[dict[str, JsonValue], dict[str, frozenset[type]]] | None:
    """The parameters' schema as pydantic writes it (keys sorted, properties in order),
    and each one's exact types, when every parameter is a JSON scalar whose default, if
    any, is a value of its own types; None otherwise."""
    properties: dict[str, JsonValue] = {}
    kinds: dict[str, frozenset[type]] = {}
    required: list[JsonValue] = []
    for parameter in parameters:
        found = _scalar(hints[parameter.name])
        if found is None:
            return None
        schema, kinds[parameter.name] = found
        entry = dict(schema)
        if parameter.default is inspect.Parameter.empty:
            required.append(parameter.name)
        elif type(parameter.default) in kinds[parameter.name]:
            entry["default"] = parameter.default
        else:
            return None
        if parameter.name in described:
            entry["description"] = described[parameter.name]
        properties[parameter.name] = dict(sorted(entry.items()))
    schema = {"additionalProperties": False, "properties": properties}
    if required:
        schema["required"] = required
    schema["type"] = "object"
    return schema, kinds


def _arguments_model(label: str, fields: dict[str, Any]) -> type[BaseModel]:
    from pydantic import ConfigDict, PydanticUserError, create_model

    try:
        return create_model(f"{label}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
    except (PydanticUserError, TypeError, NameError) as error:
        raise ToolDefinitionError(f"{label}: {_first_bad_field(fields) or error}") from None


def _model_schema(label: str, model: type[BaseModel]) -> dict[str, JsonValue]:
    from pydantic import PydanticUserError

    try:
        schema = model.model_json_schema(schema_generator=compact_generator())
    except PydanticUserError as error:
        raise ToolDefinitionError(
            f"{label}: {_first_bad_field(dict(model.model_fields)) or error}"
        ) from None
    schema.setdefault("properties", {})
    return schema


def _first_bad_field(fields: dict[str, Any]) -> str | None:
    from pydantic import TypeAdapter

    for name, spec in fields.items():
        annotation: Any = spec[0] if isinstance(spec, tuple) else getattr(spec, "annotation", spec)
        if typing.get_origin(annotation) is Annotated:
            annotation = typing.get_args(annotation)[0]
        try:
            TypeAdapter(annotation).json_schema()
        except Exception as error:  # which field pydantic choked on, for the message
            return f"parameter {name!r}: {_no_schema(annotation, error)}"
    return None


def _output_schema(label: str, annotation: Any) -> dict[str, JsonValue] | None:
    if annotation in _NO_OUTPUT:
        return None
    from pydantic import TypeAdapter

    try:
        schema = TypeAdapter(annotation).json_schema(schema_generator=compact_generator())
    except Exception as error:  # pydantic raises several unrelated types here
        raise ToolDefinitionError(
            f"{label}: return annotation {_no_schema(annotation, error)}"
        ) from None
    return schema or None


def _no_schema(annotation: Any, error: Exception) -> str:
    """Why a type cannot be a tool's parameter or value, in a tool author's terms (not
    pydantic's model_config advice, which a tool's author has no model to apply to)."""
    shown = getattr(annotation, "__qualname__", None) or repr(annotation)
    reason = str(error).splitlines()[0]
    if "arbitrary_types_allowed" in reason or "Unable to generate pydantic-core schema" in reason:
        reason = (
            "a model can only send and read JSON: use a dataclass, a TypedDict, a pydantic "
            "model or plain types (str, int, float, bool, list, dict) instead"
        )
    return f"{shown} has no JSON Schema form: {reason}"


@functools.cache
def compact_generator() -> type[GenerateJsonSchema]:
    """Pydantic's schema generator without the ``title`` noise a model does not need
    (made on first use: pydantic is loaded only for the signatures that need it)."""
    from pydantic.json_schema import GenerateJsonSchema

    class CompactJsonSchema(GenerateJsonSchema):
        def generate(self, schema: CoreSchema, mode: Any = "validation") -> JsonSchemaValue:
            generated = super().generate(schema, mode=mode)
            result = strip_titles(generated)
            assert isinstance(result, dict)
            return result

    return CompactJsonSchema


def _described(
    schema: dict[str, JsonValue] | None, text: str | None
) -> dict[str, JsonValue] | None:
    """The docstring's ``Returns:`` text as the output schema's description."""
    if schema is None or not text or "description" in schema:
        return schema
    return {**schema, "description": text}


def _binder(
    model: Callable[[], type[BaseModel]], as_is: dict[str, frozenset[type]] | None
) -> Callable[[dict[str, JsonValue]], dict[str, Any]]:
    """Arguments of the exact types the function takes go to it as they are (absent ones
    get its defaults); any others through the pydantic model, made when first needed."""
    made: list[type[BaseModel]] = []

    def bind(arguments: dict[str, JsonValue]) -> dict[str, Any]:
        if as_is is not None and all(
            type(value) in as_is.get(name, ()) for name, value in arguments.items()
        ):
            return arguments
        if not made:
            made.append(model())
        instance = made[0].model_validate(arguments)
        return {name: getattr(instance, name) for name in made[0].model_fields}

    return bind


__all__ = ["DerivedSignature", "derive_signature"]
