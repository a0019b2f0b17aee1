"""A worker whose seccomp filter cannot be applied, as on a kernel without it.

Test-only: started only by the test that names this module as the worker module. Every
other layer is applied as usual; the filter's step fails the way a missing libseccomp
or kernel support makes it fail, so the host sees a real worker lacking one layer.
"""

from __future__ import annotations

from typing import Any

from codeact.executors import _confine
from codeact.executors._worker import main


def _no_filter(*args: Any, **kwargs: Any) -> str:
    raise OSError("simulated: this kernel applies no seccomp filter")


_confine._seccomp = _no_filter

if __name__ == "__main__":
    main()
