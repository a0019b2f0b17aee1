"""Definition: @tool and Tool.from_schema derive exact schemas and refuse bad definitions."""

from __future__ import annotations

import ast
import enum
import inspect
import json
import socket
import subprocess
import sys
import typing
from typing import Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from typing_extensions import TypedDict

from codeact import Tool, ToolDefinitionError, tool
from codeact.code_mode._stubs import stub
from codeact.contract._signature import derive_signature


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Address(BaseModel):
    street: str
    number: int = 1


class Options(TypedDict):
    fast: bool


def test_schema_is_derived_from_signature_and_docstring() -> None:
    @tool
    def find(
        city: str,
        unit: Literal["c", "f"] = "c",
        color: Color = Color.RED,
        limit: int | None = None,
        address: Address | None = None,
        options: Options | None = None,
        tags: list[str] | None = None,
        weights: dict[str, float] | None = None,
    ) -> Address:
        """Find an address in a city.

        Args:
            city: The city to search,
                spelled in full.
            unit: Temperature unit.
        """
        return Address(street=city)

    params = find.parameters
    props = params["properties"]
    assert isinstance(props, dict)
    assert find.name == "find"
    assert find.description == "Find an address in a city."
    assert params["required"] == ["city"]
    assert params["additionalProperties"] is False
    assert props["city"] == {
        "type": "string",
        "description": "The city to search, spelled in full.",
    }
    assert props["unit"] == {
        "type": "string",
        "enum": ["c", "f"],
        "default": "c",
        "description": "Temperature unit.",
    }
    assert props["color"] == {"$ref": "#/$defs/Color", "default": "red"}
    assert props["limit"] == {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None}
    defs = params["$defs"]
    assert isinstance(defs, dict)
    assert defs["Color"] == {"enum": ["red", "blue"], "type": "string"}
    assert defs["Options"]["required"] == ["fast"]  # type: ignore[index]
    assert find.output_schema == {
        "properties": {"street": {"type": "string"}, "number": {"default": 1, "type": "integer"}},
        "required": ["street"],
        "type": "object",
    }
    assert "title" not in repr(params)


def test_binder_turns_json_into_the_declared_python_types() -> None:
    @tool
    def paint(color: Color, address: Address) -> str:
        """Paint."""
        return ""

    bound = paint.bind_arguments({"color": "blue", "address": {"street": "Main"}})
    assert bound["color"] is Color.BLUE
    assert bound["address"] == Address(street="Main", number=1)


def test_a_property_named_title_is_kept() -> None:
    @tool
    def post(title: str) -> None:
        """Post."""

    assert "title" in post.parameters["properties"]  # type: ignore[operator]


def test_async_functions_are_recognised() -> None:
    @tool
    async def fetch(url: str) -> str:
        """Fetch."""
        return url

    assert fetch.is_async
    assert fetch.output_schema == {"type": "string"}


def test_no_return_annotation_means_no_output_schema() -> None:
    @tool
    def ping() -> None:
        """Ping."""

    assert ping.output_schema is None
    assert ping.parameters == {"additionalProperties": False, "properties": {}, "type": "object"}


def test_explicit_schema_tool_gets_arguments_as_keywords() -> None:
    def run(**arguments: object) -> object:
        return arguments

    built = Tool.from_schema(
        name="raw",
        description="Raw tool.",
        parameters={"type": "object", "properties": {"x": {"type": "integer"}}},
        function=run,
    )
    assert built.bind_arguments({"x": 1}) == {"x": 1}
    assert built.parameter_names == ("x",)


@pytest.mark.parametrize("name", ["", "has space", "dot.name", "x" * 65, "é"])
def test_names_outside_the_pattern_are_refused(name: str) -> None:
    with pytest.raises(ToolDefinitionError, match="must match"):
        Tool.from_schema(name=name, description="", parameters={"type": "object"}, function=print)


def test_invalid_json_schema_is_refused_with_its_location() -> None:
    with pytest.raises(ToolDefinitionError, match="not a valid JSON Schema"):
        Tool.from_schema(
            name="bad",
            description="",
            parameters={"type": "object", "properties": {"x": {"type": "nonsense"}}},
            function=print,
        )


def test_non_object_parameters_are_refused() -> None:
    with pytest.raises(ToolDefinitionError, match="object schema"):
        Tool.from_schema(name="bad", description="", parameters={"type": "string"}, function=print)


def test_annotation_without_schema_is_refused_naming_the_parameter() -> None:
    def connect(sock: socket.socket) -> None:
        """Connect."""

    with pytest.raises(ToolDefinitionError, match="parameter 'sock'") as refused:
        tool(connect)
    assert "socket has no JSON Schema form" in str(refused.value)
    assert "use a dataclass, a TypedDict, a pydantic model or plain types" in str(refused.value)
    assert "arbitrary_types_allowed" not in str(refused.value)  # pydantic's advice is not ours


def test_a_return_annotation_without_schema_is_refused_in_a_tool_authors_terms() -> None:
    def opened() -> socket.socket:
        """Open."""
        raise NotImplementedError

    with pytest.raises(ToolDefinitionError, match="return annotation socket has no") as refused:
        tool(opened)
    assert "arbitrary_types_allowed" not in str(refused.value)


def test_missing_annotation_is_refused() -> None:
    def loose(x) -> None:  # type: ignore[no-untyped-def]
        """Loose."""

    with pytest.raises(ToolDefinitionError, match="no type annotation"):
        tool(loose)


def test_var_arguments_are_refused() -> None:
    def many(*values: int) -> int:
        """Many."""
        return 0

    with pytest.raises(ToolDefinitionError, match=r"\*values"):
        tool(many)


def test_return_annotation_without_schema_is_refused() -> None:
    def opener() -> socket.socket:
        """Open."""
        raise NotImplementedError

    with pytest.raises(ToolDefinitionError, match="return annotation"):
        tool(opener)


def test_non_positive_timeout_is_refused() -> None:
    with pytest.raises(ToolDefinitionError, match="timeout"):

        @tool(timeout=0)
        def quick() -> None:
            """Quick."""


@pytest.mark.parametrize(
    "doc",
    [
        """Convert an amount.

        Args:
            amount: How much,
                in the source currency.
            currency: ISO code.

        Returns:
            The converted amount.
        """,
        """Convert an amount.

        :param amount: How much,
            in the source currency.
        :param currency: ISO code.
        :returns: The converted amount.
        """,
        """Convert an amount.

        Parameters
        ----------
        amount : float
            How much,
            in the source currency.
        currency : str
            ISO code.

        Returns
        -------
        float
            The converted amount.
        """,
    ],
    ids=["google", "rest", "numpy"],
)
def test_google_rest_and_numpy_docstrings_describe_parameters_and_the_return(doc: str) -> None:
    def convert(amount: float, currency: str) -> float:
        return amount

    convert.__doc__ = doc
    made = tool(convert)
    assert made.description == "Convert an amount."
    props = made.parameters["properties"]
    assert isinstance(props, dict)
    assert props["amount"]["description"] == "How much, in the source currency."
    assert props["currency"]["description"] == "ISO code."
    assert made.output_schema == {"type": "number", "description": "The converted amount."}


class Weather(TypedDict):
    conditions: str
    celsius: float


def test_an_object_result_is_shown_as_a_typed_dict_with_args_and_returns() -> None:
    @tool
    def get_weather(city: str, days: int = 1) -> Weather:
        """Weather in a city.

        Args:
            city: Where.
            days: How many days.

        Returns:
            Today's conditions.
        """
        return {"conditions": "rain", "celsius": 9.5}

    source = stub(get_weather)
    tree = ast.parse("from typing import NotRequired, TypedDict\n" + source)
    (typed,) = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    (function,) = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert typed.name == "GetWeatherResult"
    assert [ast.unparse(field) for field in typed.body] == ["conditions: str", "celsius: float"]
    assert ast.unparse(function.returns) == "GetWeatherResult"  # type: ignore[arg-type]
    assert ast.get_docstring(function) == (
        "Weather in a city.\n\nArgs:\n    city: Where.\n    days: How many days.\n\n"
        "Returns:\n    Today's conditions."
    )


class Severity(enum.Enum):
    LOW = "low"
    HIGH = "high"


class Match(BaseModel):
    line: int
    text: str
    severity: Severity = Severity.LOW


class Found(BaseModel):
    path: str
    matches: list[Match]


class Query(BaseModel):
    pattern: str
    near: Match | None = None


def names_left_undefined(source: str) -> set[str]:
    """Names the stubs use in annotations that nothing in them (or typing) defines."""
    import builtins
    import typing

    tree = ast.parse(source)
    defined = {n.name for n in tree.body if isinstance(n, ast.ClassDef | ast.FunctionDef)}
    defined |= {
        t.id
        for n in tree.body
        if isinstance(n, ast.Assign)
        for t in n.targets
        if isinstance(t, ast.Name)
    }
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    known = set(dir(builtins)) | set(dir(typing)) | {"NotRequired"}
    return used - defined - known


def test_nested_models_in_a_stub_are_typed_dicts_of_their_own_and_defined_once() -> None:
    from codeact.code_mode._stubs import stubs

    @tool
    def search(query: Query, limit: int = 5) -> list[Found]:
        """Search the files."""
        return []

    @tool
    def first(query: Query) -> Found:
        """The first file that matches."""
        raise NotImplementedError

    source = stubs([search, first])
    assert names_left_undefined(source) == set()
    assert source.count("class Match(TypedDict):") == 1
    assert 'Severity = Literal["low", "high"]' in source
    assert source.index("class Match(TypedDict):") < source.index("class Found(TypedDict):")
    assert "    near: NotRequired[Match | None]" in source
    assert "def search(query: Query, limit: int = 5) -> list[Found]:" in source


def test_a_tool_returning_bytes_gives_base64_and_its_stub_says_so() -> None:
    import anyio

    from codeact import InProcessExecutor, Runtime, ToolCall, ToolRegistry
    from codeact.code_mode._stubs import stub

    payload = b"\x89PNG\r\n\x00\xff\xfe"

    @tool
    def raw() -> bytes:
        """Read raw bytes."""
        return payload

    @tool
    def both() -> dict[str, bytes]:
        """Bytes inside a mapping."""
        return {"head": payload[:4]}

    assert "bytes, as base64 text" in stub(raw)
    registry = ToolRegistry()
    registry.register(raw)
    registry.register(both)
    runtime = Runtime(registry, executor=InProcessExecutor())
    native = anyio.run(lambda: runtime.execute(ToolCall("c1", "raw", {}), mode="native"))
    assert not native.is_error, native.text
    assert native.value == "iVBORw0KAP/+"
    script = (
        "import base64\n[base64.b64decode(raw()).hex(), base64.b64decode(both()['head']).hex()]"
    )
    coded = anyio.run(
        lambda: runtime.execute(ToolCall("c2", "run_code", {"code": script}), mode="code")
    )
    assert not coded.is_error, coded.text
    assert coded.value["result"] == (payload.hex(), payload[:4].hex())  # type: ignore[index]


# Scalar signatures without pydantic -------------------------------------------------

SCALARS = [str, int, float, bool, str | None, int | None, float | None, bool | None]
DEFAULTS = {str: ["", "x"], int: [0, 7], float: [1.5], bool: [True, False]}


def _scalar_function(
    spec: list[tuple[str, object, object, str | None]], returns: object, returns_doc: str | None
) -> object:
    """A real function with these parameters (name, annotation, default, description)."""
    args = "".join(f"    {name}: {text}\n" for name, _, _, text in spec if text)
    doc = "Do it.\n\n" + (f"Args:\n{args}\n" if args else "")
    doc += f"Returns:\n    {returns_doc}\n" if returns_doc else ""
    scope: dict[str, object] = {}
    signature = ", ".join(
        f"{name}: {name}_type" + ("" if default is NO_DEFAULT else f" = {name}_default")
        for name, _, default, _ in spec
    )
    namespace = {f"{name}_type": kind for name, kind, _, _ in spec}
    namespace.update({f"{name}_default": default for name, _, default, _ in spec})
    namespace["returns_type"] = returns
    keywords = f"*, {signature}" if signature else ""
    exec(f"def made({keywords}) -> returns_type:\n    {doc!r}\n", namespace, scope)
    return scope["made"]


NO_DEFAULT = object()


@st.composite
def scalar_signatures(
    draw: st.DrawFn,
) -> tuple[object, list[tuple[str, object, object, str | None]]]:
    names = draw(
        st.lists(st.sampled_from(["a", "b", "city", "days", "flag"]), unique=True, max_size=4)
    )
    spec = []
    for name in names:
        kind = draw(st.sampled_from(SCALARS))
        base = [part for part in typing.get_args(kind) if part is not type(None)] or [kind]
        choices: list[object] = [NO_DEFAULT, *DEFAULTS[base[0]]]
        if kind not in DEFAULTS:
            choices.append(None)
        default = draw(st.sampled_from(choices))
        text = draw(st.none() | st.sampled_from(["the city.", "how many days."]))
        spec.append((name, kind, default, text))
    returns = draw(st.sampled_from([*SCALARS, None]))
    returns_doc = draw(st.none() | st.just("the answer."))
    return _scalar_function(spec, returns, returns_doc), spec


@settings(max_examples=150, deadline=None)
@given(scalar_signatures())
def test_a_scalar_signature_reads_to_the_schemas_pydantic_writes(
    made: tuple[object, list[tuple[str, object, object, str | None]]],
) -> None:
    from codeact.contract._signature import _arguments_model, _field, _model_schema, _output_schema

    function, spec = made
    derived = derive_signature(function)  # type: ignore[arg-type]
    hints = typing.get_type_hints(function, include_extras=True)  # type: ignore[arg-type]
    parameters = inspect.signature(function).parameters  # type: ignore[arg-type]
    described = {name: text for name, _, _, text in spec}
    fields = {name: _field(parameters[name], hints, described[name]) for name in parameters}
    by_pydantic = _model_schema("made", _arguments_model("made", fields))
    assert derived.parameters == by_pydantic
    assert json.dumps(derived.parameters) == json.dumps(by_pydantic)  # the same order too
    expected_output = _output_schema("made", hints["return"])
    if expected_output is not None and "Returns:" in (function.__doc__ or ""):  # type: ignore[attr-defined]
        expected_output = {**expected_output, "description": "the answer."}
    assert derived.output_schema == expected_output


def test_a_scalar_tool_is_defined_and_called_without_loading_pydantic_or_jsonschema() -> None:
    program = """
import sys
from codeact import ToolCall, ToolRegistry, tool

@tool
def forecast(city: str, days: int = 3, metric: bool | None = None) -> float:
    '''Tomorrow's temperature.'''
    return 20.5 + days

registry = ToolRegistry()
registry.register(forecast)
import anyio
result = anyio.run(registry.execute, ToolCall("c2", "forecast", {"city": "Oslo", "days": 1}))
print(result.value, "pydantic" in sys.modules, "jsonschema" in sys.modules)
result = anyio.run(registry.execute, ToolCall("c3", "forecast", {"city": "Oslo", "days": 2.0}))
print(result.value, "pydantic" in sys.modules)
result = anyio.run(registry.execute, ToolCall("c4", "forecast", {"city": 5}))
print(result.error.code, "jsonschema" in sys.modules)
"""
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True
    )
    lines = done.stdout.strip().splitlines()[-3:]
    assert lines[0] == "21.5 False False"  # exact types: bound as they are, checked plainly
    assert lines[1] == "22.5 True"  # 2.0 for an int: pydantic converts it, loaded for it
    assert lines[2] == "INVALID_ARGUMENTS True"  # a wrong type: jsonschema says what is wrong


def test_arguments_a_scalar_tool_must_convert_are_converted_as_pydantic_would() -> None:
    @tool
    def scaled(count: int, factor: float = 1.0, label: str | None = None) -> float:
        """Scale."""
        return count * factor

    assert scaled.bind_arguments({"count": 2}) == {"count": 2}  # as it is: defaults apply
    bound = scaled.bind_arguments({"count": 2.0, "factor": 3})
    assert type(bound["count"]) is int
    assert bound["count"] == 2
    assert type(bound["factor"]) is float
    assert bound["factor"] == 3.0
    assert bound["label"] is None
