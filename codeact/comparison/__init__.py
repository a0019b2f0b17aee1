"""Native against code, measured: the comparison API, the built-in M3ToolEval suite and its
data, fault injection, the real-model path. May import: contract to agent."""
