"""Run every benchmark in turn: ``python -m benchmarks``."""

from __future__ import annotations

from . import dispatch

for module in (dispatch,):
    module.main()
    print()
