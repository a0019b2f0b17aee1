"""The simple-keyword check never accepts what jsonschema refuses (property-based)."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeact.contract._exceptions import ToolDefinitionError
from codeact.contract._schema import (
    checked_schema,
    compile_validator,
    describe_errors,
    plainly_valid,
    plainly_wellformed,
)

TYPES = ["string", "integer", "number", "boolean", "null", "object", "array"]

values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abc"), inner, max_size=3)
    ),
    max_leaves=8,
)


def schemas() -> st.SearchStrategy[Any]:
    leaf = st.fixed_dictionaries(
        {},
        optional={
            "type": st.sampled_from(TYPES)
            | st.lists(st.sampled_from(TYPES), min_size=1, max_size=2),
            "enum": st.lists(
                st.none() | st.booleans() | st.integers(-2, 2) | st.just(1.0) | st.just("a"),
                min_size=1,
                max_size=3,
            ),
            "description": st.text(max_size=3),
            "minimum": st.integers(-2, 2),
        },
    )
    return st.recursive(
        leaf,
        lambda inner: st.fixed_dictionaries(
            {},
            optional={
                "type": st.sampled_from(["object", "array"]),
                "properties": st.dictionaries(st.sampled_from("abc"), inner, max_size=3),
                "required": st.lists(st.sampled_from("abc"), max_size=2, unique=True),
                "additionalProperties": st.booleans() | inner,
                "items": inner,
                "anyOf": st.lists(inner, min_size=1, max_size=2),
            },
        ),
        max_leaves=6,
    )


@settings(max_examples=600, deadline=None)
@given(schemas(), values)
def test_plainly_valid_implies_valid(schema: dict[str, Any], value: Any) -> None:
    if plainly_valid(schema, value):
        assert jsonschema.Draft202012Validator(schema).is_valid(value), (schema, value)


# Item schemas that say only a type (a list of rows, of names): checked in one pass over the
# items' types, and exactly as jsonschema decides (no integer-valued floats among these).
item_types = st.sampled_from(["string", "boolean", "null", "object", "array"])
typed_items = (
    item_types.map(lambda name: {"type": name})
    | st.lists(item_types, min_size=1, max_size=2, unique=True).map(lambda n: {"type": n})
    | st.just({"type": "object", "additionalProperties": True, "description": "a row"})
    | st.just({"type": "object", "properties": {}})
)


@settings(max_examples=400, deadline=None)
@given(typed_items, st.lists(values, max_size=6))
def test_a_list_of_typed_items_is_decided_without_jsonschema(
    items: dict[str, Any], value: list[Any]
) -> None:
    schema = {"type": "array", "items": items}
    assert plainly_valid(schema, value) == jsonschema.Draft202012Validator(schema).is_valid(value)


def test_a_list_of_rows_needs_no_jsonschema() -> None:
    schema = {"type": "array", "items": {"type": "object", "additionalProperties": True}}
    rows = [{"id": index, "tags": ["a"], "score": index / 7} for index in range(200)]
    assert plainly_valid(schema, rows)
    assert not plainly_valid(schema, [*rows, "not a row"])
    assert not plainly_valid(schema, {"rows": rows})


def test_the_common_call_needs_no_jsonschema_and_errors_still_read_the_same() -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"],
        "additionalProperties": False,
    }
    assert plainly_valid(schema, {"city": "Oslo", "days": 3})
    assert not plainly_valid(schema, {"city": "Oslo", "days": "3"})
    validator = compile_validator(schema)
    assert describe_errors(validator, {"city": "Oslo"}, schema=schema) is None
    assert describe_errors(validator, {"days": 2.5}, schema=schema) == describe_errors(
        validator, {"days": 2.5}
    )


# Schema-like values, well and badly formed: wrong shapes for the known keywords, unknown
# keywords, and keywords whose values need a closer look (a pattern, a format).
shapes = st.recursive(
    st.none() | st.booleans() | st.integers(-1, 2) | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=2)
    ),
    max_leaves=6,
)


def loose_schemas() -> st.SearchStrategy[Any]:
    keyword = st.sampled_from(
        [
            "type",
            "properties",
            "required",
            "additionalProperties",
            "items",
            "anyOf",
            "oneOf",
            "allOf",
            "enum",
            "description",
            "title",
            "default",
            "$comment",
            "pattern",
            "format",
            "minimum",
            "$schema",
        ]
    )
    return st.recursive(
        st.booleans() | st.dictionaries(keyword, shapes | st.sampled_from(TYPES), max_size=3),
        lambda inner: st.dictionaries(
            keyword,
            inner
            | shapes
            | st.lists(inner, max_size=2)
            | st.dictionaries(st.sampled_from("abc"), inner, max_size=2),
            max_size=3,
        ),
        max_leaves=8,
    )


@settings(max_examples=800, deadline=None)
@given(loose_schemas())
def test_a_plainly_wellformed_schema_is_one_jsonschema_accepts(schema: Any) -> None:
    if plainly_wellformed(schema):
        jsonschema.Draft202012Validator.check_schema(schema)


@settings(max_examples=300, deadline=None)
@given(schemas())
def test_generated_tool_schemas_need_no_jsonschema_to_be_checked(schema: dict[str, Any]) -> None:
    valid = jsonschema.Draft202012Validator(jsonschema.Draft202012Validator.META_SCHEMA)
    if valid.is_valid(schema) and "minimum" not in str(schema):  # minimum: jsonschema's
        assert plainly_wellformed(schema), schema


def test_a_malformed_schema_is_still_refused_with_where_and_why() -> None:
    for bad, where in (
        ({"type": "object", "properties": {"a": {"type": "strin"}}}, "properties/a/type"),
        ({"type": "object", "required": "a"}, "required"),
        ({"type": "string", "pattern": "("}, "pattern"),
    ):
        assert not plainly_wellformed(bad)
        with pytest.raises(ToolDefinitionError, match="is not a valid JSON Schema at") as refused:
            checked_schema(bad, what="the schema")
        assert where in str(refused.value)
