"""Shared fixtures (the anyio backend) and the property-test profile."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings

# Shared two-core machines are slow at times: generating examples slowly is not a failure
# of what is tested (no test asserts a duration).
settings.register_profile("shared-machine", suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("shared-machine")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
