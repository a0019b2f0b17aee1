"""The public surface: one sorted ``__all__`` that matches what the package exports."""

from __future__ import annotations

import codeact


def test_all_is_sorted_and_unique() -> None:
    assert list(codeact.__all__) == sorted(set(codeact.__all__))


def test_every_public_name_is_exported_and_every_export_is_public() -> None:
    exported = {name for name in dir(codeact) if not name.startswith("_")}
    modules = {name for name in exported if type(getattr(codeact, name)).__name__ == "module"}
    assert exported - modules == set(codeact.__all__)


def test_stable_error_codes_are_all_present() -> None:
    expected = {
        "UNKNOWN_TOOL",
        "INVALID_ARGUMENTS",
        "POLICY_DENIED",
        "TIMEOUT",
        "ABORTED",
        "TOOL_ERROR",
        "INVALID_OUTPUT",
        "CODE_SYNTAX_ERROR",
        "CODE_RUNTIME_ERROR",
        "CODE_SECURITY_VIOLATION",
        "CODE_RESOURCE_LIMIT",
    }
    assert {code.value for code in codeact.ErrorCode} == expected


def test_every_name_in_all_resolves_to_an_object() -> None:
    for name in codeact.__all__:
        assert getattr(codeact, name) is not None, name
