"""The built-in comparison suite: M3ToolEval's 81 tasks in native, code and both styles.

Offline (no model given), each task's model behaviour is generated from its
ground-truth plan, so the figures measure the runtime's mechanics, not a model.
"""

from __future__ import annotations

from ._suite.compare import Metrics, planned_tasks, run_suite, table

__all__ = ["Metrics", "planned_tasks", "run_suite", "table"]
