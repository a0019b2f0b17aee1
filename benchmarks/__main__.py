"""Run every benchmark in turn: ``python -m benchmarks``."""

from __future__ import annotations

from . import advertisement, dispatch, executor, interpreter

for module in (dispatch, interpreter, executor, advertisement):
    module.main()
    print()
