"""Emission: raw arguments stay raw, and parsing never raises."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codeact import ToolCall, parse_arguments
from codeact.contract._json import dumps


def test_arguments_stay_the_raw_text_the_model_sent() -> None:
    call = ToolCall("c1", "read", '{"path": "a.txt" }')
    assert call.arguments == '{"path": "a.txt" }'


def test_a_mapping_is_stored_as_canonical_json() -> None:
    assert ToolCall("c1", "read", {"b": 1, "a": [True]}).arguments == '{"a":[true],"b":1}'


def test_empty_arguments_mean_an_empty_object() -> None:
    assert parse_arguments("") == {}
    assert parse_arguments("  \n") == {}


def test_unparseable_text_comes_back_as_the_text() -> None:
    assert parse_arguments('{"a": ') == '{"a": '
    assert parse_arguments("NaN") == "NaN"


def test_deep_nesting_does_not_raise() -> None:
    text = "[" * 100_000 + "]" * 100_000
    assert parse_arguments(text) == text


@given(
    st.one_of(
        st.text(),
        st.recursive(
            st.none() | st.integers() | st.text(),
            lambda c: st.lists(c) | st.dictionaries(st.text(), c),
        ).map(json.dumps),
    )
)
def test_parsing_any_text_never_raises_and_keeps_what_it_cannot_parse(text: str) -> None:
    parsed = parse_arguments(text)
    if not text.strip():
        assert parsed == {}
    elif parsed != text:
        assert json.loads(text) == parsed


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(json_values)
def test_canonical_text_is_what_json_writes_sorted_and_compact(value: object) -> None:
    expected = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert dumps(value) == expected
    assert ToolCall("c", "t", {"value": value}).arguments == dumps({"value": value})


def test_a_value_that_holds_itself_is_refused_as_json_refuses_it() -> None:
    looped: list[object] = []
    looped.append(looped)
    with pytest.raises(ValueError, match="Circular reference"):
        dumps({"a": looped})
