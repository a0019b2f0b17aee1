"""Code mode: the run_code tool, how it shows tools (stubs, script names, discovery), the pre-run
check; a durable runtime's runs go to the durable layer. May import: contract to durable."""
