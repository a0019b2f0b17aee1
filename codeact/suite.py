"""The built-in comparison suite: M3ToolEval's tasks in native, native-parallel, code and
both styles, through the public comparison API::

    from codeact import compare
    from codeact.suite import STYLES, planned_model, suite_tasks, suite_tools

    comparison = await compare(
        suite_tasks(), tools=suite_tools, model=planned_model, styles=STYLES
    )

Offline (``planned_model``), each task's model behaviour is generated from its
ground-truth plan, so the figures measure the runtime's mechanics, not a model.
"""

from __future__ import annotations

from .comparison._compare import STYLES
from .comparison._suite import (
    Metrics,
    planned_model,
    planned_tasks,
    run_suite,
    suite_tasks,
    suite_tools,
    table,
)

__all__ = [
    "STYLES",
    "Metrics",
    "planned_model",
    "planned_tasks",
    "run_suite",
    "suite_tasks",
    "suite_tools",
    "table",
]
