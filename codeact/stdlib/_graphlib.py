"""``graphlib`` for scripts: the real sorter, given only nodes the host can hash itself.

The real ``TopologicalSorter`` keys a dict by the script's nodes and compares them: a
script class's ``__hash__`` and ``__eq__`` would run inside host code, and a graph that is
the script's own mapping, or predecessors that are its own iterable, would be read by
calling the script's ``items`` and ``__iter__``. Here a node is a value of a type whose
hashing and equality run no Python (text, numbers, bytes, None, and tuples and frozensets
of them), the graph a dict and each node's predecessors a list, tuple, set, frozenset or
string; anything else is a TypeError that names what was given. What is sorted, the order
and the errors are the real module's.
"""

from __future__ import annotations

import graphlib
from collections.abc import Iterable
from typing import Any

# Values hashed and compared by C alone: the nodes a graph may hold.
_SCALARS = frozenset({str, int, float, complex, bool, type(None), bytes})
_CONTAINERS = frozenset({tuple, frozenset})
_PREDECESSORS = frozenset({list, tuple, set, frozenset, str})
MAX_NODE_DEPTH = 100  # a tuple of tuples this deep is no one's node


def _check_node(node: Any, depth: int = 0) -> None:
    kind = type(node)
    if kind in _SCALARS:
        return
    if kind in _CONTAINERS and depth < MAX_NODE_DEPTH:
        for item in node:
            _check_node(item, depth + 1)
        return
    if kind in (list, dict, set, bytearray):  # CPython's own words for these
        raise TypeError(f"unhashable type: '{kind.__name__}'")
    raise TypeError(
        "graphlib's nodes are text, numbers, bytes, None, or tuples and frozensets of them "
        f"in scripts, not {kind.__name__}"
    )


def _predecessors_of(given: Any) -> tuple[Any, ...]:
    if type(given) not in _PREDECESSORS:  # a script's iterable would run in here
        raise TypeError(
            "a node's predecessors are a list, tuple, set, frozenset or string in scripts, "
            f"not {type(given).__name__}"
        )
    return tuple(given)


class TopologicalSorter:
    """``graphlib.TopologicalSorter``, its nodes checked before the real one holds them."""

    __slots__ = ("_sorter",)

    def __init__(self, graph: Any = None) -> None:
        self._sorter: graphlib.TopologicalSorter[Any] = graphlib.TopologicalSorter()
        if graph is not None:
            if type(graph) is not dict:  # the real one reads graph.items(): the script's
                raise TypeError(f"the graph is a dict in scripts, not {type(graph).__name__}")
            for node, predecessors in list(graph.items()):
                self.add(node, *_predecessors_of(predecessors))

    def add(self, node: Any, *predecessors: Any) -> None:
        _check_node(node)
        for predecessor in predecessors:
            _check_node(predecessor)
        self._sorter.add(node, *predecessors)

    def prepare(self) -> None:
        self._sorter.prepare()

    def is_active(self) -> bool:
        return self._sorter.is_active()

    def __bool__(self) -> bool:
        return self._sorter.is_active()

    def get_ready(self) -> tuple[Any, ...]:
        return self._sorter.get_ready()

    def done(self, *nodes: Any) -> None:
        for node in nodes:
            _check_node(node)
        self._sorter.done(*nodes)

    def static_order(self) -> Iterable[Any]:
        return self._sorter.static_order()


TopologicalSorter.__module__ = "graphlib"  # what type() of one shows

GRAPHLIB_MEMBERS: dict[str, Any] = {
    "TopologicalSorter": TopologicalSorter,
    "CycleError": graphlib.CycleError,
}
SORTER_METHODS = ("add", "prepare", "is_active", "get_ready", "done", "static_order")

__all__ = ["GRAPHLIB_MEMBERS", "SORTER_METHODS", "TopologicalSorter"]
