"""Shared fixtures (the anyio backend) and the property-test profile."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

# Shared two-core machines are slow at times: generating examples slowly is not a failure
# of what is tested (no test asserts a duration).
settings.register_profile("shared-machine", suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("shared-machine")

# Tests count this process's children and descriptors before and after: a worker template
# started as codeact is imported would be one of them until an executor takes it over.
# tests/executors/test_early_template.py starts hosts with it on.
os.environ["CODEACT_EARLY_TEMPLATE"] = "0"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
