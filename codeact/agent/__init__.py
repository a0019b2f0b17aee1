"""The agent loop: turns of model requests and tool calls over a Runtime, logged in a Session,
and their tracing spans. May import: contract to providers."""
