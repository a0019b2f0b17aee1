"""Models: the adapter seam and its test doubles, HTTP adapters (OpenAI-compatible, Anthropic),
server-sent events, strict schemas and the wire formats. May import: contract."""
