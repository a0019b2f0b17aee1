"""Where scripts run: in-process, or in kernel-confined worker processes (worker, template,
pipe, confinement, threads, folders). May import: contract, sandbox, stdlib."""
