"""Host functions marked recursion-safe call, by name, only functions marked so too.

A RecursionError raised in a host frame under the script is the script's to catch only
when every host frame from the script's call down is marked ``recursion_safe`` (see
``codeact.sandbox._errors``). A safe function that calls an unmarked one turns a script's
ordinary RecursionError into the end of its run whenever the limit happens to land in the
callee: which frame it lands in moves with the depth a script starts from, so the case
passes or fails by where the worker's own frames leave it. Each function named here was
read for that; what stays unmarked is listed with the reason.
"""

from __future__ import annotations

import dis
import gc
import importlib
import pkgutil
import sys
import types
import weakref

import codeact.sandbox
import codeact.stdlib
from codeact.sandbox._errors import _RECURSION_SAFE

# callee -> why a safe function may name it unmarked
REVIEWED = {
    # compared against (``fallback is not _BUILTIN_GETATTR``), never called
    "codeact.sandbox._guards.Builtin.__getattr__": "compared, not called",
    "codeact.sandbox._guards.GuardedMethod.__getattr__": "compared, not called",
    # a wrapper class is made once per type for the process: a RecursionError landing
    # there ends the run, and the class is listed last, so nothing is half made
    "codeact.sandbox._ownership.register_readable": "once per wrapped type",
    "codeact.sandbox._sealed.seal": "once per wrapped type",
}


def _functions() -> dict[types.CodeType, types.FunctionType]:
    for package in (codeact.sandbox, codeact.stdlib):
        for module in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
            importlib.import_module(module.name)
    found: dict[types.CodeType, types.FunctionType] = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith("codeact."):
            continue
        for value in vars(module).values():
            members = vars(value).values() if isinstance(value, type) else (value,)
            for member in members:
                function = getattr(member, "__func__", member)
                if isinstance(function, types.FunctionType):
                    found.setdefault(function.__code__, function)
    return found


def _named_calls(code: types.CodeType, namespace: dict[str, object]) -> set[types.FunctionType]:
    named = set()
    for instruction in dis.get_instructions(code):
        if instruction.opname == "LOAD_GLOBAL":
            target = namespace.get(instruction.argval)
            if isinstance(target, types.FunctionType):
                named.add(target)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            named |= _named_calls(constant, namespace)
    return named


def test_a_recursion_safe_function_names_only_recursion_safe_functions() -> None:
    functions = _functions()
    safe = [f for code, f in functions.items() if code in _RECURSION_SAFE]
    assert len(safe) > 80  # the walk found the marked functions
    unmarked = set()
    for function in safe:
        for callee in _named_calls(function.__code__, function.__globals__):
            ours = callee.__module__.startswith("codeact.")
            if ours and callee.__code__ not in _RECURSION_SAFE:
                unmarked.add(f"{callee.__module__}.{callee.__qualname__}")
    assert unmarked <= set(REVIEWED), sorted(unmarked - set(REVIEWED))


def test_the_methods_dataclass_writes_for_a_script_are_marked_while_their_class_lives() -> None:
    from codeact.sandbox import Limits
    from codeact.stdlib import standard_sandbox

    sandbox = standard_sandbox(limits=Limits(wall_seconds=30.0, cpu_seconds=10.0))
    outcome = sandbox.run(
        "from dataclasses import dataclass\n@dataclass(order=True)\nclass Point:\n"
        "    x: int\n    y: int = 0\nPoint(1) < Point(2)"
    )
    assert outcome.error is None, outcome.error
    generated = [
        vars(sandbox.globals["Point"])[name].__code__ for name in ("__init__", "__eq__", "__lt__")
    ]
    assert all(code in _RECURSION_SAFE for code in generated)
    kept = [weakref.ref(code) for code in generated]
    del generated
    sandbox.close()  # the session's classes go with it, and their marks
    del sandbox
    gc.collect()
    assert [ref() for ref in kept] == [None, None, None]  # the marks held none of them
