"""``storage_info``: what ``kafka-storage info`` reports about a node's directories."""

from __future__ import annotations

import os

from attrs import frozen

from quorum.config import ServerConfig
from quorum.storage.directories import configured_directories, scan_directories
from quorum.storage.meta_properties import MetaProperties

__all__ = ["StorageInfo", "storage_info"]


@frozen(kw_only=True)
class StorageInfo:
    """The directories that exist, the first ``meta.properties`` found, and
    every problem (Kafka's ``StorageTool.infoCommand`` texts)."""

    directories: tuple[str, ...]
    found_directories: tuple[str, ...]
    metadata: MetaProperties | None
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


def _existence_problem(path: str) -> str | None:
    if os.path.isdir(path):
        return None
    return f"{path} is not a directory" if os.path.exists(path) else f"{path} does not exist"


def storage_info(config: ServerConfig) -> StorageInfo:
    """Inspect every directory of ``config`` without changing anything."""
    directories = configured_directories(config)
    problems: list[str] = []
    found: list[str] = []
    first: MetaProperties | None = None
    for state in scan_directories(directories):
        missing = _existence_problem(state.path)
        if missing is not None:
            problems.append(missing)
            continue
        found.append(state.path)
        if state.error is not None:
            problems.append(state.error)
        elif state.meta is None:
            problems.append(f"{state.path} is not formatted.")
        elif first is None:
            first = state.meta
        elif state.meta.cluster_id != first.cluster_id:
            problems.append("Mismatched cluster IDs between storage directories.")
        elif state.meta.node_id != first.node_id:
            problems.append("Mismatched node IDs between storage directories.")
    return StorageInfo(
        directories=directories,
        found_directories=tuple(found),
        metadata=first,
        problems=tuple(problems),
    )
