"""The native vs code comparison: M3ToolEval tasks, mechanical offline behaviour, metrics."""
