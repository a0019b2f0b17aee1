"""The ``codeact`` command line (run, schemas, serve-mcp, compare).
May import: every layer."""
