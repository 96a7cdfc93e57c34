"""The scale layer: real processes with 100,000 partitions (the integration layer's fixtures)."""

from __future__ import annotations

from tests.integration.conftest import pytest_runtest_makereport, start_cluster

__all__ = ["pytest_runtest_makereport", "start_cluster"]
