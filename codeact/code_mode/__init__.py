"""Code mode: the run_code tool, how it shows tools (stubs, script names, discovery), the pre-run
check, durable runs (plans, preview, commit, replay). May import: contract to session."""
