"""The ``codeact`` command line (run, schemas, serve-mcp, doctor, compare).
May import: every layer."""
