"""Shared fixtures: the anyio backend, and a registry with a few typical tools."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
