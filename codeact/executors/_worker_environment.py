"""What a worker process (or the template it is forked from) inherits of the host.

Kept apart, and light to import: the early template (``_early_template``) is started
with it before the rest of codeact is imported.
"""

from __future__ import annotations

import os
import sys

# the folder that holds the codeact package, so a worker imports this very copy
_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
# Set to "0" to keep ``import codeact`` from starting a worker template (see _early_template).
EARLY_TEMPLATE_VARIABLE = "CODEACT_EARLY_TEMPLATE"

# All a worker inherits of the host's environment; it never starts a template of its own.
WORKER_ENVIRONMENT = {
    "PATH": os.defpath,
    "LANG": "C.UTF-8",
    "PYTHONPATH": _PACKAGE_ROOT,
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONNOUSERSITE": "1",
    EARLY_TEMPLATE_VARIABLE: "0",
}
DEFAULT_WORKER_MODULE = "codeact.executors._worker"


def template_command(worker_module: str) -> list[str]:
    """How the host starts the template of workers that run ``worker_module``."""
    # -P: nothing is imported from the host's working folder, where the template starts
    return [sys.executable, "-P", "-m", "codeact.executors._template", worker_module]
