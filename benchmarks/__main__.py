"""Run every benchmark in turn: ``python -m benchmarks``."""

from __future__ import annotations

from . import dispatch, interpreter

for module in (dispatch, interpreter):
    module.main()
    print()
