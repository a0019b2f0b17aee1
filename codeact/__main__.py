"""``python -m codeact``: the command line."""

import sys

from .cli._main import main

sys.exit(main())
