"""Run every benchmark in turn: ``python -m benchmarks``."""

from __future__ import annotations

import time

import anyio

from codeact.comparison._suite import planned_tasks, run_suite

from . import (
    advertisement,
    bridges,
    channel,
    confinement,
    cpython,
    dispatch,
    durable,
    executor,
    gather,
    interpreter,
    load,
    mcp_clients,
    peers,
    plain_arguments,
    preview,
    runtime,
    tracing,
)

for module in (
    dispatch,
    interpreter,
    plain_arguments,
    runtime,
    executor,
    channel,
    gather,
    bridges,
    durable,
    preview,
    confinement,
    cpython,
    load,
    mcp_clients,
    advertisement,
    tracing,
    peers,
):
    module.main()
    print()

started = time.perf_counter()
anyio.run(run_suite, planned_tasks())
print(f"Offline comparison (81 tasks x 4 styles): {time.perf_counter() - started:.1f} s")
