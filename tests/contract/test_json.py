"""Detaching a value: a plain copy of exact JSON types, or an error naming where it is not.

Every tool result and every call's arguments pass through ``detach``; these properties
hold it to a reading of the value written the slow, obvious way.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeact.contract._json import MAX_DEPTH, FrozenDict, NotJsonError, detach, freeze, thaw


class Text(str):
    pass


class Number(int):
    pass


class Ratio(float):
    pass


class Rows(list):  # type: ignore[type-arg]
    pass


class Record(dict):  # type: ignore[type-arg]
    pass


scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=4)
    | st.text(max_size=3).map(Text)
    | st.integers(-5, 5).map(Number)
    | st.floats(-2, 2).map(Ratio)
)
keys = st.text(max_size=3) | st.text(max_size=3).map(Text)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=3).map(tuple)
        | st.lists(inner, max_size=3).map(Rows)
        | st.dictionaries(keys, inner, max_size=4)
        | st.dictionaries(keys, inner, max_size=3).map(Record)
    ),
    max_leaves=25,
)


def plain_reading(value: Any) -> Any:
    """The same value read through the base types, one case at a time."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, dict):
        return {str.__str__(key): plain_reading(item) for key, item in value.items()}
    return [plain_reading(item) for item in value]


def containers(value: Any) -> list[Any]:
    found = [value] if isinstance(value, list | tuple | dict) else []
    inner = value.values() if isinstance(value, dict) else value
    if found:
        for item in inner:
            found.extend(containers(item))
    return found


def exact(value: Any) -> bool:
    kind = type(value)
    if kind is dict:
        return all(type(key) is str and exact(item) for key, item in value.items())
    if kind is list:
        return all(exact(item) for item in value)
    return kind in (str, int, float, bool, type(None))


@settings(max_examples=400, deadline=None)
@given(values)
def test_a_detached_value_reads_the_same_in_exact_types_and_shares_no_container(
    value: Any,
) -> None:
    plain = detach(value)
    assert plain == plain_reading(value)
    assert exact(plain)
    original = {id(container) for container in containers(value)}
    assert not any(id(container) in original for container in containers(plain))


def frozen_through(value: Any) -> bool:
    """Read-only all the way down: FrozenDict objects and tuples, scalars inside."""
    kind = type(value)
    if kind is FrozenDict:
        return all(type(key) is str and frozen_through(item) for key, item in value.items())
    if kind is tuple:
        return all(frozen_through(item) for item in value)
    return kind in (str, int, float, bool, type(None))


@settings(max_examples=400, deadline=None)
@given(values)
def test_a_frozen_value_reads_the_same_cannot_change_and_shares_no_container(
    value: Any,
) -> None:
    """Containers of scalars are copied whole, others item by item: either way the same
    reading, immutable at every level, and nothing shared with the detached value."""
    plain = detach(value)
    frozen = freeze(plain)
    assert thaw(frozen) == plain
    assert frozen_through(frozen)
    original = {id(container) for container in containers(plain)}
    assert not any(id(container) in original for container in containers(frozen))


# One thing with no JSON form, put somewhere inside a value: the error names that place.
misfits = st.sampled_from(
    [
        (math.nan, "NaN and infinity have no JSON form"),
        (-math.inf, "NaN and infinity have no JSON form"),
        (b"raw", "a value of type bytes is not JSON"),
        ({1, 2}, "a value of type set is not JSON"),
        ({3: "three"}, "object keys must be strings, not int"),
    ]
)


@st.composite
def placed(draw: st.DrawFn) -> tuple[Any, str, str]:
    misfit, reason = draw(misfits)
    value: Any = misfit
    path = ""
    for _ in range(draw(st.integers(0, 4))):
        before = draw(st.lists(st.integers() | st.text(max_size=2), max_size=3))
        if draw(st.booleans()):
            value = [*before, value, *draw(st.lists(st.none(), max_size=2))]
            path = f"[{len(before)}]{path}"
        else:
            name = draw(st.text("abc", min_size=1, max_size=3))
            fields = {f"_{index}": item for index, item in enumerate(before)}
            value = {**fields, name: value, "z_after": None}
            path = f".{name}{path}"
    return value, path, reason


@settings(max_examples=300, deadline=None)
@given(placed())
def test_what_has_no_json_form_is_named_where_it_is(case: tuple[Any, str, str]) -> None:
    value, path, reason = case
    with pytest.raises(NotJsonError) as refused:
        detach(value)
    assert refused.value.reason == reason
    assert refused.value.path == "$" + path


def test_depth_is_bounded_and_the_bound_names_the_path() -> None:
    nested: Any = "leaf"
    for _ in range(MAX_DEPTH + 5):
        nested = {"k": [nested]}
    with pytest.raises(NotJsonError, match=f"nested deeper than {MAX_DEPTH} levels") as refused:
        detach(nested)
    assert refused.value.path.startswith("$.k[0].k[0]")
    shallow: Any = "leaf"
    for _ in range(MAX_DEPTH // 2):
        shallow = [shallow]
    assert detach(shallow) == shallow
