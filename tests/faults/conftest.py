"""Fault injection against real processes: the integration layer's cluster fixtures."""

from __future__ import annotations

from tests.integration.conftest import pytest_runtest_makereport, start_cluster

__all__ = ["pytest_runtest_makereport", "start_cluster"]
