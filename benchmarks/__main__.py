"""Run every benchmark in turn: ``python -m benchmarks``."""

from __future__ import annotations

from . import dispatch, executor, interpreter

for module in (dispatch, interpreter, executor):
    module.main()
    print()
