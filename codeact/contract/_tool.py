"""Definition: a tool is defined once, and everything else is derived from it.

A ``Tool`` is a frozen value: its schemas are checked when it is built, and their
validators compiled once, when a value first needs more than the plain check. ``@tool``
builds one from a typed, docstringed function; ``Tool.from_schema`` from an explicit JSON
Schema and a callable.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias, overload

from ._exceptions import ToolDefinitionError
from ._json import FrozenJson, JsonValue
from ._results import ContentBlock
from ._schema import PlainCheck, checked_schema, compile_validator, plain_checker
from ._signature import derive_signature

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
DEFAULT_TIMEOUT_SECONDS = 60.0
DEFAULT_MAX_CONTENT_CHARS = 20_000

Renderer: TypeAlias = Callable[
    [Mapping[str, FrozenJson], FrozenJson], "str | Sequence[ContentBlock]"
]
ArgumentBinder: TypeAlias = Callable[[dict[str, JsonValue]], dict[str, Any]]


def _plain_binder(arguments: dict[str, JsonValue]) -> dict[str, Any]:
    return arguments


@dataclass(frozen=True, kw_only=True)
class Tool:
    """A callable the model may use, with everything the host needs to run it.

    Only ``name``, ``description`` and ``parameters`` are ever shown to a model;
    the other fields are the host's business.
    """

    name: str
    description: str
    parameters: dict[str, JsonValue]
    function: Callable[..., Any]
    output_schema: dict[str, JsonValue] | None = None
    bind_arguments: ArgumentBinder = _plain_binder
    timeout: float | None = DEFAULT_TIMEOUT_SECONDS
    render: Renderer | None = None
    concurrency_safe: bool = False
    max_content_chars: int = DEFAULT_MAX_CONTENT_CHARS
    # What the tool is like, in MCP's terms (title, readOnlyHint, destructiveHint,
    # idempotentHint, openWorldHint): served by serve-mcp, never shown to a provider.
    annotations: dict[str, JsonValue] | None = None
    is_async: bool = field(init=False)
    parameter_validator: Validator = field(init=False, repr=False, compare=False)
    output_validator: Validator | None = field(init=False, repr=False, compare=False)
    parameter_check: PlainCheck = field(init=False, repr=False, compare=False)
    output_check: PlainCheck | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not NAME_PATTERN.fullmatch(self.name):
            raise ToolDefinitionError(
                f"tool name {self.name!r} must match {NAME_PATTERN.pattern} "
                "(letters, digits, '_' and '-', at most 64 characters)"
            )
        if not callable(self.function):
            raise ToolDefinitionError(f"tool {self.name!r}: function is not callable")
        if self.timeout is not None and not self.timeout > 0:
            raise ToolDefinitionError(f"tool {self.name!r}: timeout must be positive or None")
        parameters = checked_schema(self.parameters, what=f"tool {self.name!r} parameters")
        if parameters.get("type") != "object":
            raise ToolDefinitionError(
                f'tool {self.name!r}: parameters must be an object schema ("type": "object")'
            )
        output = self.output_schema
        if output is not None:
            output = checked_schema(output, what=f"tool {self.name!r} output schema")
        set_field = object.__setattr__
        set_field(self, "parameters", parameters)
        set_field(self, "output_schema", output)
        set_field(self, "is_async", inspect.iscoroutinefunction(self.function))
        set_field(self, "parameter_validator", compile_validator(parameters))
        set_field(self, "output_validator", None if output is None else compile_validator(output))
        set_field(self, "parameter_check", plain_checker(parameters))
        set_field(self, "output_check", None if output is None else plain_checker(output))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The function itself, as written (a test, a helper calling another tool):
        nothing is validated or dispatched. Through a registry or a runtime, a call goes
        through the whole pipeline."""
        return self.function(*args, **kwargs)

    @classmethod
    def from_schema(
        cls,
        *,
        name: str,
        description: str,
        parameters: Mapping[str, object],
        function: Callable[..., Any],
        output_schema: Mapping[str, object] | None = None,
        timeout: float | None = DEFAULT_TIMEOUT_SECONDS,
        render: Renderer | None = None,
        concurrency_safe: bool = False,
        max_content_chars: int = DEFAULT_MAX_CONTENT_CHARS,
        annotations: Mapping[str, JsonValue] | None = None,
    ) -> Tool:
        """A tool from an explicit JSON Schema; ``function`` gets the arguments as keywords."""
        return cls(
            name=name,
            description=description,
            parameters=dict(parameters),  # type: ignore[arg-type]
            function=function,
            output_schema=None if output_schema is None else dict(output_schema),  # type: ignore[arg-type]
            timeout=timeout,
            render=render,
            concurrency_safe=concurrency_safe,
            max_content_chars=max_content_chars,
            annotations=None if annotations is None else dict(annotations),
        )

    @property
    def writes(self) -> bool:
        """May a call change something? MCP's reading: only ``readOnlyHint`` says it does
        not; with no annotation a tool may write."""
        return not (self.annotations or {}).get("readOnlyHint", False)

    @property
    def repeatable(self) -> bool:
        """May a call simply be made again (read-only, or idempotent by its key)?"""
        hints = self.annotations or {}
        return bool(hints.get("readOnlyHint") or hints.get("idempotentHint"))

    @property
    def parameter_names(self) -> tuple[str, ...]:
        """Parameter names in schema order: the order positional arguments map to."""
        properties = self.parameters.get("properties")
        return tuple(properties) if isinstance(properties, dict) else ()


@overload
def tool(function: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = DEFAULT_TIMEOUT_SECONDS,
    render: Renderer | None = None,
    concurrency_safe: bool = False,
    max_content_chars: int = DEFAULT_MAX_CONTENT_CHARS,
    annotations: Mapping[str, JsonValue] | None = None,
    read_only: bool | None = None,
    destructive: bool | None = None,
    idempotent: bool | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = DEFAULT_TIMEOUT_SECONDS,
    render: Renderer | None = None,
    concurrency_safe: bool = False,
    max_content_chars: int = DEFAULT_MAX_CONTENT_CHARS,
    annotations: Mapping[str, JsonValue] | None = None,
    read_only: bool | None = None,
    destructive: bool | None = None,
    idempotent: bool | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a typed, docstringed function (sync or async) into a :class:`Tool`.

    The parameters schema comes from the signature (through pydantic), the
    description from the docstring, each parameter's description from its
    ``Args:`` entry, and the output schema from the return annotation.
    ``read_only``, ``destructive`` and ``idempotent`` are MCP's ``readOnlyHint``,
    ``destructiveHint`` and ``idempotentHint``, set in ``annotations``.
    """
    flags = {
        hint: value
        for hint, value in (
            ("readOnlyHint", read_only),
            ("destructiveHint", destructive),
            ("idempotentHint", idempotent),
        )
        if value is not None
    }
    hinted: dict[str, JsonValue] | None = (
        {**(annotations or {}), **flags}
        if flags
        else None
        if annotations is None
        else dict(annotations)
    )

    def build(fn: Callable[..., Any]) -> Tool:
        signature = derive_signature(fn)
        return Tool(
            name=name or fn.__name__,
            description=description if description is not None else signature.description,
            parameters=signature.parameters,
            output_schema=signature.output_schema,
            function=fn,
            bind_arguments=signature.bind,
            timeout=timeout,
            render=render,
            concurrency_safe=concurrency_safe,
            max_content_chars=max_content_chars,
            annotations=None if hinted is None else dict(hinted),
        )

    return build if function is None else build(function)


__all__ = ["DEFAULT_MAX_CONTENT_CHARS", "DEFAULT_TIMEOUT_SECONDS", "NAME_PATTERN", "Tool", "tool"]
