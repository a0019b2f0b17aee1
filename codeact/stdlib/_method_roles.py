"""What the standard library's methods do with their parameters, where it is more than
compute with plain values.

A script reads a host method (``queue.put``) through the attribute guard, which hands it
out with its arguments checked (``codeact.sandbox._plain_arguments``): every parameter is
data, plain values only, unless it is named here. A method that stores or hands on the
script's object without acting on it *passes* it; one that only picks from a container or
calls a callback it is given *holds* it; one that iterates any iterable has it *drained*.
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import statistics

from ..sandbox._plain_arguments import register_method_roles
from ._everyday import ExitStack


def register(chain_map: type, counter: type) -> None:
    """Register the roles (``chain_map`` and ``counter``: the runtime's own classes)."""
    for queue in (asyncio.Queue, asyncio.PriorityQueue, asyncio.LifoQueue):
        for name in ("put", "put_nowait"):
            register_method_roles(queue, name, passed=("item",))  # stored, handed back
    register_method_roles(asyncio.TaskGroup, "create_task", passed=("coro",))  # the loop runs it
    register_method_roles(asyncio.Condition, "wait_for", held=("predicate",))
    # a context manager's own protocol, and callbacks with their arguments: the stack's job
    for stack in (ExitStack, contextlib.ExitStack):
        register_method_roles(stack, "enter_context", passed=("cm",))
        register_method_roles(stack, "push", passed=("exit",))
        register_method_roles(stack, "callback", held=("callback",), passed=("args", "kwds"))
    # keys are hashed by dict's C code; values are kept (ChainMap), or counted (a count of
    # the script's is added by Counter's code as a count the counter already holds would be)
    register_method_roles(chain_map, "get", passed=("key", "default"))
    register_method_roles(chain_map, "pop", passed=("key", "args"))
    register_method_roles(chain_map, "fromkeys", passed=("iterable", "args"))
    register_method_roles(chain_map, "new_child", held=("m",), passed=("kwargs",))
    for name in ("update", "subtract"):
        register_method_roles(counter, name, passed=("iterable", "kwds"))
    register_method_roles(statistics.NormalDist, "from_samples", drained=("data",))
    register_method_roles(csv.DictWriter, "writerows", drained=("rowdicts",))


__all__ = ["register"]
