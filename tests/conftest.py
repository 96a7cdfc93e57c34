"""Settings shared by every test layer."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

from deploy.handicap import CpuHandicap, handicap_from_env

# CI machines have 2 busy cores: no per-example deadline, and the too_slow
# health check would only measure the machine's load.
settings.register_profile(
    "ci",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.register_profile("dev", deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


_HANDICAP = pytest.StashKey[CpuHandicap]()


def pytest_configure(config: pytest.Config) -> None:
    """``PYKRAFT_HANDICAP=FACTOR``: the run on a machine made FACTOR times slower on purpose
    (``deploy.handicap``: CPU burners beside the processes under test, calibrated before
    the first test; the header says the factor reached). Unset: nothing."""
    handicap = handicap_from_env()
    if handicap is not None:
        config.stash[_HANDICAP] = handicap
        handicap.__enter__()


def pytest_report_header(config: pytest.Config) -> str | None:
    handicap = config.stash.get(_HANDICAP, None)
    return None if handicap is None or handicap.report is None else handicap.report.describe()


def pytest_unconfigure(config: pytest.Config) -> None:
    handicap = config.stash.get(_HANDICAP, None)
    if handicap is not None:
        handicap.stop()
