"""OpenAI strict mode round-trips: whatever conforms to an advertised strict schema
passes dispatch, and a null for an optional parameter means its default.

Values are drawn from the strict schemas themselves, over the
tools of the offline suite, tools with nested models, and the published BFCL schemas.
The openai SDK's own conversion is the reference: everything its strict form accepts,
codeact's accepts too.
"""

from __future__ import annotations

import copy
import enum
import json
from typing import Any, Literal

import anyio
import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.lib._pydantic import _ensure_strict_json_schema
from pydantic import BaseModel, Field

from codeact import (
    Tool,
    ToolCall,
    ToolExecutionFailure,
    ToolRegistry,
    openai_chat_tools,
    thaw,
    to_strict,
    tool,
)
from codeact.comparison._m3tooleval import DOMAIN_TOOLS, browser_tools
from codeact.contract._dialects import from_bfcl
from tests.contract.test_real_schemas import published
from tests.json_values import NoValue
from tests.json_values import values as from_schema


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Address(BaseModel):
    street: str
    city: str = "Paris"
    postcode: str | None = Field(default=None, pattern=r"^[0-9]{5}$")


class Line(BaseModel):
    sku: str = Field(min_length=1)
    quantity: int = Field(default=1, ge=1)
    gift: bool = False


@tool
def place_order(
    customer: str,
    lines: list[Line],
    ship_to: Address | None = None,
    colour: Colour = Colour.RED,
    speed: Literal["slow", "fast"] = "slow",
    note: str = "",
    tags: list[str] | None = None,
) -> dict[str, Any]:
    """Place an order (nested models, enums, literals and defaults at every level)."""
    return {
        "customer": customer,
        "lines": [line.model_dump() for line in lines],
        "ship_to": ship_to.model_dump() if ship_to else None,
        "colour": colour.value,
        "speed": speed,
        "note": note,
        "tags": tags,
    }


@tool
def bill(amount: float, currency: str = "EUR", billing: Address | None = None) -> str:
    """Bill an amount (a model referenced from an optional parameter)."""
    return f"{amount} {currency} {billing.city if billing else '-'}"


def echo(**arguments: Any) -> dict[str, Any]:
    return arguments


def suite_tools() -> list[Tool]:
    tools = [made for domain in DOMAIN_TOOLS.values() for made in domain]
    return [*tools, *browser_tools(), place_order, bill]


def bfcl_tools() -> list[Tool]:
    return [
        Tool.from_schema(
            name=f"f{number}",
            description=function.get("description", ""),
            parameters=from_bfcl(function["parameters"]),
            function=echo,
        )
        for number, function in enumerate(published())
    ]


def registry_of(tools: list[Tool]) -> ToolRegistry:
    registry = ToolRegistry()
    for made in tools:
        registry.register(made)
    return registry


SLOW = settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def strict_form(made: Tool) -> dict[str, Any] | None:
    (advertised,) = openai_chat_tools(
        [{"name": made.name, "description": made.description, "parameters": made.parameters}],
        strict=True,
    )
    function = advertised["function"]
    return function["parameters"] if function.get("strict") else None


def optional_names(schema: dict[str, Any]) -> set[str]:
    required = set(schema.get("required", []))
    return {name for name in schema.get("properties", {}) if name not in required}


def accepts_null(schema: Any) -> bool:
    return jsonschema.Draft202012Validator({**schema, "$defs": {}}).is_valid(None) is True


def check_round_trip(registry: ToolRegistry, made: Tool, arguments: dict[str, Any]) -> None:
    result = anyio.run(registry.execute, ToolCall("c", made.name, json.dumps(arguments)))
    refused = f"invalid arguments for {made.name!r}"  # dispatch's words, not the tool's own
    assert refused not in result.text, (
        made.name,
        arguments,
        result.text,
    )


# The suite's tools and tools with nested models ---------------------------------------


def open_map(schema: Any) -> bool:
    """Somewhere in ``schema``, an object that takes keys it does not name."""
    if isinstance(schema, list):
        return any(open_map(item) for item in schema)
    if not isinstance(schema, dict):
        return False
    extra = schema.get("additionalProperties")
    return extra not in (None, False) or any(open_map(value) for value in schema.values())


def test_suite_tools_lack_a_strict_form_only_for_open_maps() -> None:
    for made in suite_tools():
        assert (strict_form(made) is None) == open_map(made.parameters), made.name


STRICT_SUITE = [made for made in suite_tools() if strict_form(made) is not None]


@pytest.mark.parametrize("made", STRICT_SUITE, ids=lambda made: made.name)
@SLOW
@given(data=st.data())
def test_conforming_strict_arguments_pass_dispatch(made: Tool, data: st.DataObject) -> None:
    strict = strict_form(made)
    assert strict is not None
    arguments = data.draw(from_schema(strict))
    check_round_trip(registry_of([made]), made, arguments)


def test_a_null_for_an_optional_parameter_means_its_default() -> None:
    registry = registry_of([place_order])
    arguments = {
        "customer": "ada",
        "lines": [{"sku": "a", "quantity": None, "gift": None}],
        "ship_to": {"street": "1 rue", "city": None, "postcode": None},
        "colour": None,
        "speed": None,
        "note": None,
        "tags": None,
    }
    result = anyio.run(registry.execute, ToolCall("c", "place_order", json.dumps(arguments)))
    assert not result.is_error, result.text
    assert thaw(result.value) == {
        "customer": "ada",
        "lines": [{"sku": "a", "quantity": 1, "gift": False}],
        "ship_to": {"street": "1 rue", "city": "Paris", "postcode": None},
        "colour": "red",
        "speed": "slow",
        "note": "",
        "tags": None,  # nullable in its own right: the null is a value, as sent
    }


def test_a_null_for_a_required_parameter_is_still_refused() -> None:
    registry = registry_of([place_order])
    arguments = {"customer": None, "lines": [{"sku": None}]}
    result = anyio.run(registry.execute, ToolCall("c", "place_order", json.dumps(arguments)))
    assert isinstance(result, ToolExecutionFailure)
    assert result.error.code == "INVALID_ARGUMENTS"
    assert "$.customer: None is not of type 'string'" in result.text
    assert "$.lines[0].sku" in result.text


def test_a_reference_with_siblings_is_inlined_and_constraints_are_kept() -> None:
    schema = {
        "type": "object",
        "$defs": {"Code": {"type": "string", "pattern": "^[A-Z]{3}$"}},
        "properties": {
            "currency": {"$ref": "#/$defs/Code", "description": "ISO 4217"},
            "fallback": {"$ref": "#/$defs/Code"},
        },
        "required": ["currency"],
    }
    strict = to_strict(schema)
    assert strict is not None
    assert strict["properties"]["currency"] == {
        "type": "string",
        "pattern": "^[A-Z]{3}$",
        "description": "ISO 4217",
    }
    assert strict["properties"]["fallback"] == {
        "anyOf": [{"$ref": "#/$defs/Code"}, {"type": "null"}]
    }
    assert strict["required"] == ["currency", "fallback"]


def test_a_recursive_reference_with_siblings_is_inlined_once() -> None:
    schema = {
        "type": "object",
        "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}},
        "properties": {"head": {"$ref": "#/$defs/Node", "description": "a list"}},
        "required": ["head"],
    }
    strict = to_strict(schema)
    assert strict is not None
    assert strict["properties"]["head"]["description"] == "a list"
    assert "$ref" not in strict["properties"]["head"]
    validator = jsonschema.Draft202012Validator(strict)
    assert validator.is_valid({"head": {"next": {"next": None}}})
    assert not validator.is_valid({"head": {"next": {"next": None, "extra": 1}}})


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"x": {"oneOf": [{"type": "integer"}, {"minimum": 0}]}}},
        {"type": "object", "properties": {"x": {}}},
        {"type": "object", "properties": {"x": True}},
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"type": "object", "properties": {"x": {"type": "string"}}, "minProperties": 1},
        {
            "type": "object",
            "allOf": [
                {"properties": {"a": {"type": "string"}}},
                {"properties": {"b": {"type": "string"}}},
            ],
        },
    ],
    ids=["oneOf", "any", "true", "open-map", "count", "allOf"],
)
def test_schemas_strict_mode_cannot_state_stay_non_strict(schema: dict[str, Any]) -> None:
    assert to_strict(schema) is None


def test_an_optional_enum_becomes_nullable_with_its_values_kept() -> None:
    strict = to_strict(
        {"type": "object", "properties": {"unit": {"type": "string", "enum": ["c", "f"]}}}
    )
    assert strict is not None
    validator = jsonschema.Draft202012Validator(strict)
    assert validator.is_valid({"unit": None})
    assert validator.is_valid({"unit": "c"})
    assert not validator.is_valid({"unit": "k"})


# The published BFCL schemas ------------------------------------------------------------

BFCL = bfcl_tools()
BFCL_REGISTRY = registry_of(BFCL)
CHUNK = 50


def untyped(schema: dict[str, Any]) -> bool:
    """A property that says nothing of its shape ("any value"), which strict mode cannot say."""
    return any(
        not ({"type", "anyOf", "$ref", "enum", "const"} & sub.keys())
        for sub in schema.get("properties", {}).values()
    )


def drawable(made: Tool) -> bool:
    strict = strict_form(made)
    if strict is None:
        return False
    try:
        from_schema(strict)
    except NoValue:
        return False
    return True


BFCL_DRAWABLE = [made for made in BFCL if drawable(made)]


def test_every_bfcl_schema_has_a_strict_form_and_nearly_all_accept_a_value() -> None:
    assert len(BFCL) >= 1_200
    for made in BFCL:
        assert (strict_form(made) is None) == untyped(made.parameters), made.name
    # the rest are untyped, or published with an enum no value of their type is in
    assert len(BFCL_DRAWABLE) >= len(BFCL) - 30


@pytest.mark.parametrize("start", range(0, len(BFCL_DRAWABLE), CHUNK))
@settings(
    max_examples=3,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_bfcl_strict_arguments_pass_dispatch(start: int, data: st.DataObject) -> None:
    for made in BFCL_DRAWABLE[start : start + CHUNK]:
        strict = strict_form(made)
        assert strict is not None
        arguments = data.draw(from_schema(strict), label=made.name)
        result = anyio.run(BFCL_REGISTRY.execute, ToolCall("c", made.name, json.dumps(arguments)))
        assert "invalid arguments for" not in result.text, (made.name, arguments, result.text)
        passed = thaw(result.value)
        for name in optional_names(made.parameters):  # null meant "not given": not passed on
            if arguments.get(name, 0) is None and not accepts_null(
                made.parameters["properties"][name]
            ):
                assert name not in passed, (made.name, name)


# Beside the openai SDK's own conversion --------------------------------------------------


def sdk_strict(parameters: dict[str, Any]) -> dict[str, Any]:
    schema = copy.deepcopy(parameters)
    return _ensure_strict_json_schema(schema, path=(), root=schema)


@pytest.mark.parametrize("made", [*STRICT_SUITE, *BFCL[::25]], ids=lambda made: made.name)
def test_objects_are_closed_and_required_as_the_sdk_closes_them(made: Tool) -> None:
    ours = strict_form(made)
    assert ours is not None
    theirs = sdk_strict(made.parameters)

    def closures(schema: Any) -> list[tuple[list[str], Any]]:
        found: list[tuple[list[str], Any]] = []
        if isinstance(schema, dict):
            if "properties" in schema:
                found.append((sorted(schema["required"]), schema.get("additionalProperties")))
            for value in schema.values():
                found.extend(closures(value))
        elif isinstance(schema, list):
            for value in schema:
                found.extend(closures(value))
        return found

    assert sorted(map(str, closures(ours))) == sorted(map(str, closures(theirs)))


@pytest.mark.parametrize(
    "made", [place_order, bill, *BFCL_DRAWABLE[::50]], ids=lambda made: made.name
)
@SLOW
@given(data=st.data())
def test_whatever_the_sdk_strict_form_accepts_codeact_accepts(
    made: Tool, data: st.DataObject
) -> None:
    ours = strict_form(made)
    assert ours is not None
    arguments = data.draw(from_schema(sdk_strict(made.parameters)))
    assert jsonschema.Draft202012Validator(ours).is_valid(arguments), arguments
    check_round_trip(registry_of([made]), made, arguments)
