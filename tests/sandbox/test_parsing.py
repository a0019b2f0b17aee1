"""Parsing in many threads at once while the collector runs finalizers (CPython 3.11
shares the AST conversion's nesting count between threads)."""

from __future__ import annotations

import gc
import sys
import threading

from codeact.sandbox._parsing import compile_tree, parse

SOURCE = "\n".join(f"x{i} = [{', '.join(str(j) for j in range(30))}]" for i in range(100))


class Finalized:
    """A cycle with a finalizer: the collector runs Python code when it frees one."""

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        sum(range(50))


def test_parses_in_many_threads_never_corrupt_each_other() -> None:
    failures: list[BaseException] = []

    def work() -> None:
        for _ in range(40):
            for _ in range(50):
                Finalized()
            try:
                compile_tree(parse(SOURCE), "<script>")
            except SystemError as error:  # "AST constructor recursion depth mismatch"
                failures.append(error)
                return

    thresholds, interval = gc.get_threshold(), sys.getswitchinterval()
    gc.set_threshold(100, 5, 5)
    sys.setswitchinterval(1e-5)  # switch threads very often
    try:
        threads = [threading.Thread(target=work) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        gc.set_threshold(*thresholds)
        sys.setswitchinterval(interval)
    assert failures == []
