"""Kafka's topic name rules (clients' ``internals.Topic``).

Legal names are 1 to 249 characters of ``[a-zA-Z0-9._-]`` other than "." and
"..". Two names that differ only by '.' versus '_' collide: Kafka's metric
names replace '.' with '_', so both topics would report under one name.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = [
    "CLUSTER_METADATA_TOPIC",
    "INTERNAL_TOPICS",
    "MAX_NAME_LENGTH",
    "OFFSETS_TOPIC",
    "CollisionIndex",
    "topic_name_problem",
]

CLUSTER_METADATA_TOPIC: Final = "__cluster_metadata"
# the group coordinator's committed offsets and group metadata (a compacted topic)
OFFSETS_TOPIC: Final = "__consumer_offsets"
# Kafka's internal topics: marked internal in Metadata answers, written only by brokers
INTERNAL_TOPICS: Final = frozenset({OFFSETS_TOPIC, "__transaction_state"})
MAX_NAME_LENGTH: Final = 249
_LEGAL: Final = re.compile(r"[a-zA-Z0-9._-]+")


def topic_name_problem(name: str) -> str | None:
    """Why ``name`` is not a legal topic name, or None if it is."""
    reason = None
    if not name:
        reason = "the empty string is not allowed"
    elif name in (".", ".."):
        reason = f"'{name}' is not allowed"
    elif len(name) > MAX_NAME_LENGTH:
        reason = (
            f"the length of '{name}' is longer than the max allowed length {MAX_NAME_LENGTH}"
        )
    elif not _LEGAL.fullmatch(name):
        reason = (
            f"'{name}' contains one or more characters other than ASCII alphanumerics, "
            "'.', '_' and '-'"
        )
    return None if reason is None else f"Topic name is invalid: {reason}"


def _unified(name: str) -> str:
    return name.replace(".", "_")




class CollisionIndex:
    """Names by their '.'-as-'_' form: which known name a new one collides with, without
    a scan of every topic per name (a request of many dotted names was quadratic)."""

    def __init__(self) -> None:
        self._names: dict[str, str] = {}

    def add(self, name: str) -> None:
        if "." in name or "_" in name:
            self._names.setdefault(_unified(name), name)

    def colliding(self, name: str) -> str | None:
        """A name added that differs from ``name`` only by '.' versus '_'."""
        if "." not in name and "_" not in name:
            return None
        other = self._names.get(_unified(name))
        return other if other != name else None
