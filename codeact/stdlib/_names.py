"""The names of the modules scripts may import by default, without importing any of them.

The host needs only the names (to describe run_code, to tell a worker what to offer);
the facades themselves are built where scripts run. ``_modules.py`` checks at import
that every name here has a facade.
"""

from __future__ import annotations

DEFAULT_MODULES = frozenset(
    {
        "__future__",
        "abc",
        "array",
        "ast",
        "asyncio",
        "base64",
        "binascii",
        "bisect",
        "calendar",
        "cmath",
        "collections",
        "collections.abc",
        "contextlib",
        "copy",
        "csv",
        "dataclasses",
        "datetime",
        "decimal",
        "difflib",
        "enum",
        "fnmatch",
        "fractions",
        "functools",
        "gc",
        "graphlib",
        "hashlib",
        "heapq",
        "html",
        "io",
        "itertools",
        "json",
        "keyword",
        "logging",
        "math",
        "numbers",
        "operator",
        "os",
        "os.path",
        "pathlib",
        "posixpath",
        "pprint",
        "queue",
        "random",
        "re",
        "secrets",
        "shlex",
        "stat",
        "statistics",
        "string",
        "struct",
        "sys",
        "textwrap",
        "time",
        "tomllib",
        "traceback",
        "types",
        "typing",
        "unicodedata",
        "urllib",
        "urllib.parse",
        "uuid",
        "warnings",
        "zlib",
        "zoneinfo",
    }
)

__all__ = ["DEFAULT_MODULES"]
