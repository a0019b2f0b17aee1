"""The Runtime: one registry advertised natively, as code or both, and the background loop of
its sync API. May import: contract to code_mode."""
