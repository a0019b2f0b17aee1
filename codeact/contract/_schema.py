"""JSON Schemas for tools: derived from Python types, and checked before use."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

from ._exceptions import ToolDefinitionError
from ._json import JsonValue, NotJsonError, detach

if TYPE_CHECKING:  # jsonschema is loaded when a schema or a value needs more than a glance
    import jsonschema
    from jsonschema.protocols import Validator

# Keys whose value maps names to sub-schemas (rather than being a schema itself).
_SCHEMA_MAPS = frozenset({"properties", "$defs", "definitions", "patternProperties"})


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
    if plainly_wellformed(plain):
        return plain
    import jsonschema

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
    """A validator for a checked schema, built when a value first needs it (most values
    pass the plain check and never do), then kept."""
    return _Deferred(schema)  # type: ignore[return-value]


class _Deferred:
    """A jsonschema validator made on first use: defining a tool costs no import of it."""

    __slots__ = ("_made", "_schema")

    def __init__(self, schema: Mapping[str, object]) -> None:
        self._schema = schema
        self._made: Validator | None = None

    def __getattr__(self, name: str) -> Any:
        made = self._made
        if made is None:
            import jsonschema

            validator_class = jsonschema.validators.validator_for(
                self._schema, default=jsonschema.Draft202012Validator
            )
            made = self._made = validator_class(
                self._schema, format_checker=validator_class.FORMAT_CHECKER
            )
        return getattr(made, name)


# A schema made only of these keywords, each of the shape it must have, is a valid JSON
# Schema (draft 2020-12) without asking jsonschema: every @tool's derived schema is one.
_TYPE_NAMES = frozenset({"string", "integer", "number", "boolean", "null", "object", "array"})
_TEXT_KEYWORDS = frozenset({"description", "title", "$comment"})
_FREE_KEYWORDS = frozenset({"default"})  # any JSON value
_SCHEMA_LISTS = frozenset({"anyOf", "oneOf", "allOf"})


def plainly_wellformed(schema: object, depth: int = 0) -> bool:
    """True when ``schema`` is certainly a valid schema by its simple keywords alone;
    False means "ask jsonschema" (which also says what is wrong)."""
    if type(schema) is bool:
        return True
    if type(schema) is not dict or depth > 32:
        return False
    for key, rule in schema.items():
        if key in _TEXT_KEYWORDS:
            ok = type(rule) is str
        elif key in _FREE_KEYWORDS:
            ok = True
        elif key == "type":
            names = [rule] if type(rule) is str else rule
            ok = (
                type(names) is list
                and len(names) > 0
                and all(type(n) is str and n in _TYPE_NAMES for n in names)
                and len(set(names)) == len(names)
            )
        elif key == "properties":
            ok = type(rule) is dict and all(
                plainly_wellformed(sub, depth + 1) for sub in rule.values()
            )
        elif key == "required":
            ok = (
                type(rule) is list
                and all(type(n) is str for n in rule)
                and len(set(rule)) == len(rule)
            )
        elif key in ("additionalProperties", "items"):
            ok = plainly_wellformed(rule, depth + 1)
        elif key in _SCHEMA_LISTS:
            ok = (
                type(rule) is list
                and len(rule) > 0
                and all(plainly_wellformed(sub, depth + 1) for sub in rule)
            )
        elif key == "enum":
            ok = type(rule) is list
        else:
            return False
        if not ok:
            return False
    return True


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


PlainCheck: TypeAlias = Callable[[object], bool]


def plainly_valid(schema: object, value: object) -> bool:
    """True when ``value`` certainly satisfies ``schema`` by its simple keywords alone."""
    return plain_checker(schema)(value)


def plain_checker(schema: object) -> PlainCheck:
    """A check of ``schema``'s simple keywords, built once per schema.

    The common case of every call (an object of strings and numbers) checked without
    building jsonschema's error machinery; False means "ask jsonschema", which also
    writes the message, so a keyword this does not know costs time, never correctness.
    """
    if schema is True:
        return _always
    if type(schema) is not dict:
        return _never
    whole_object = _object_checker(schema)
    if whole_object is not None:
        return whole_object
    checks: list[PlainCheck] = []
    for key, rule in schema.items():
        if key in _ANNOTATIONS:
            continue
        check = _keyword_check(key, rule, schema)
        if check is None:
            return _never
        checks.append(check)
    if len(checks) == 1:
        return checks[0]

    def every(value: object) -> bool:
        return all(check(value) for check in checks)

    return every


_OBJECT_KEYWORDS = frozenset({"type", "properties", "required", "additionalProperties"})


def _object_checker(schema: dict[str, Any]) -> PlainCheck | None:
    """An object schema of properties (a tool's parameters) checked in one pass over the
    value; None for any other schema."""
    keywords = {key for key in schema if key not in _ANNOTATIONS}
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if (
        not keywords <= _OBJECT_KEYWORDS
        or schema.get("type") != "object"
        or type(properties) is not dict
        or type(required) is not list
        or type(extra) is not bool
    ):
        return None
    if not properties and not required and extra:  # any object at all (dict[str, Any])
        return _is_dict
    inner = {name: plain_checker(sub) for name, sub in properties.items()}
    needed = frozenset(required)
    closed = not extra

    def whole_object(value: object) -> bool:
        if type(value) is not dict:
            return False
        for name, item in value.items():
            check = inner.get(name)
            if check is None:
                if closed:
                    return False
            elif not check(item):
                return False
        return value.keys() >= needed

    return whole_object


def _keyword_check(key: str, rule: Any, schema: dict[str, Any]) -> PlainCheck | None:
    """One keyword's check; None for a keyword (or a rule's shape) left to jsonschema."""
    if key == "type":
        allowed = _exact_types(rule)
        if allowed is None:
            return None
        return lambda value: type(value) in allowed
    if key == "properties":
        if type(rule) is not dict:
            return None
        inner = [(name, plain_checker(sub)) for name, sub in rule.items()]

        def properties(value: object) -> bool:
            if type(value) is dict:
                for name, check in inner:
                    if name in value and not check(value[name]):
                        return False
            return True

        return properties
    if key == "required":
        if type(rule) is not list:
            return None
        needed = tuple(rule)
        return lambda value: type(value) is not dict or all(name in value for name in needed)
    if key == "additionalProperties":
        known = frozenset(schema.get("properties") or ())
        if rule is False:
            return lambda value: type(value) is not dict or all(k in known for k in value)
        extra = plain_checker(rule)
        return lambda value: (
            type(value) is not dict
            or all(extra(item) for name, item in value.items() if name not in known)
        )
    if key == "items":
        kinds = _types_only(rule)
        if kinds is not None:  # a list of rows or of scalars: every item's type read in C
            return lambda value: type(value) is not list or set(map(type, value)) <= kinds
        each = plain_checker(rule)
        return lambda value: type(value) is not list or all(each(item) for item in value)
    if key == "anyOf":  # certainly valid when certainly valid against one branch
        if type(rule) is not list:
            return None
        branches = tuple(plain_checker(sub) for sub in rule)
        return lambda value: any(branch(value) for branch in branches)
    if key == "enum":
        if type(rule) is not list:
            return None
        options = tuple(rule)
        return lambda value: any(
            type(value) is type(option) and value == option for option in options
        )
    return None


def _types_only(schema: object) -> frozenset[type] | None:
    """The exact types a schema allows when its type is all it says; None otherwise."""
    if type(schema) is not dict:
        return None
    rest = {key: rule for key, rule in schema.items() if key not in _ANNOTATIONS}
    kinds = _exact_types(rest.pop("type", None))
    if rest.pop("additionalProperties", True) is not True or rest.pop("properties", {}) != {}:
        return None
    return None if rest else kinds


def _exact_types(rule: Any) -> frozenset[type] | None:
    """The exact types a ``type`` keyword's name or names allow; None for any other rule."""
    names = [rule] if type(rule) is str else rule
    if type(names) is not list:
        return None
    return frozenset(kind for name in names for kind in _EXACT_TYPES.get(name, ()))


def _is_dict(value: object) -> bool:
    return type(value) is dict


def _always(value: object) -> bool:
    return True


def _never(value: object) -> bool:
    return False


def describe_errors(
    validator: Validator,
    instance: object,
    *,
    limit: int = 3,
    schema: object = None,
    plain: PlainCheck | None = None,
) -> str | None:
    """A message naming where ``instance`` breaks the schema and what was expected.

    With ``plain`` (the validator's schema's :func:`plain_checker`) or ``schema`` (the
    validator's own), the simple keywords are checked first.
    """
    if plain is not None and plain(instance):
        return None
    if plain is None and schema is not None and plainly_valid(schema, instance):
        return None
    found: list[jsonschema.ValidationError] = list(validator.iter_errors(instance))  # type: ignore[arg-type]
    errors = sorted(found, key=lambda e: (len(e.path), [str(part) for part in e.path]))
    if not errors:
        return None
    lines = [f"{_path(error.absolute_path)}: {error.message}" for error in errors[:limit]]
    if len(errors) > limit:
        lines.append(f"... and {len(errors) - limit} more")
    return "; ".join(lines)


def drop_optional_nulls(validator: Validator, instance: JsonValue) -> bool:
    """Remove, in place, each ``null`` that stands for an optional property the schema
    does not let be null: the only way a strict-mode model can say "not given", so the
    parameter's default applies. A null where the property is required stays, and fails.
    For an instance already known to be invalid; True when it removed any.
    """
    if instance is None:
        return False
    removed: list[tuple[dict[str, Any], str]] = []
    for error in _with_branches(validator.iter_errors(instance)):
        path = list(error.absolute_path)
        if error.instance is not None or not path or not isinstance(path[-1], str):
            continue
        parent: Any = instance
        for part in path[:-1]:
            parent = parent[part]
        if isinstance(parent, dict) and parent.get(path[-1], 0) is None:
            del parent[path[-1]]
            removed.append((parent, path[-1]))
    if not removed:
        return False
    wanted: list[tuple[object, Any]] = [
        (error.instance, error.validator_value)
        for error in _with_branches(validator.iter_errors(instance))
        if error.validator == "required"
    ]
    for parent, name in removed:
        if any(held is parent and name in names for held, names in wanted):
            parent[name] = None  # required after all: the null was the model's answer
    return True


def _with_branches(
    errors: Iterable[jsonschema.ValidationError],
) -> Iterator[jsonschema.ValidationError]:
    for error in errors:
        yield error
        yield from _with_branches(error.context or ())


def _path(parts: object) -> str:
    text = "$"
    for part in parts:  # type: ignore[attr-defined]
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


__all__ = [
    "checked_schema",
    "compile_validator",
    "describe_errors",
    "drop_optional_nulls",
    "plain_checker",
    "strip_titles",
]
