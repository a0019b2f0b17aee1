"""The simple-keyword check never accepts what jsonschema refuses (property-based)."""

from __future__ import annotations

from typing import Any

import jsonschema
from hypothesis import given, settings
from hypothesis import strategies as st

from codeact._schema import compile_validator, describe_errors, plainly_valid

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
            },
        ),
        max_leaves=6,
    )


@settings(max_examples=600, deadline=None)
@given(schemas(), values)
def test_plainly_valid_implies_valid(schema: dict[str, Any], value: Any) -> None:
    if plainly_valid(schema, value):
        assert jsonschema.Draft202012Validator(schema).is_valid(value), (schema, value)


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
