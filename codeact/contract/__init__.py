"""The tool-calling contract: tools and their schemas, calls, the registry, the dispatch pipeline,
policy, results, events, JSON values, errors and tool-call tracing. Imports no other layer."""
