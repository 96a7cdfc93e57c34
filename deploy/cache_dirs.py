"""Where downloaded third-party pieces live: a cache outside the repo, one per user.

Kafka's jars (``deploy.kafka``) and the clients layer's kafkajs are fetched on first use
into ``$OVERRIDE`` when that variable is set (CI may point several at one shared disk),
else into ``${XDG_CACHE_HOME:-~/.cache}/pykraft``.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["user_cache_root"]


def user_cache_root(override_env: str) -> Path:
    """``$override_env`` if set, else ``${XDG_CACHE_HOME:-~/.cache}/pykraft``."""
    explicit = os.environ.get(override_env)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pykraft"
