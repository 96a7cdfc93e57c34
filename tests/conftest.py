"""Settings shared by every test layer."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

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
