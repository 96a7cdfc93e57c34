"""Which directories a node owns and what each one holds right now."""

from __future__ import annotations

import os

from attrs import frozen

from quorum.config import ServerConfig
from quorum.storage.errors import StorageError
from quorum.storage.meta_properties import MetaProperties, read_meta_properties

__all__ = ["DirectoryState", "configured_directories", "scan_directories"]


@frozen
class DirectoryState:
    """One directory: formatted (``meta``), empty (neither), or unreadable (``error``)."""

    path: str
    meta: MetaProperties | None = None
    error: str | None = None

    @property
    def is_formatted(self) -> bool:
        return self.meta is not None

    @property
    def is_empty(self) -> bool:
        return self.meta is None and self.error is None


def configured_directories(config: ServerConfig) -> tuple[str, ...]:
    """Every log directory and the metadata directory, sorted, each once.

    Paths are kept as configured (messages echo them); two spellings of one
    path (``data`` and ``./data/``) count once.
    """
    seen: dict[str, str] = {}
    for path in sorted((*config.log_dirs, config.metadata_log_dir)):
        seen.setdefault(os.path.normpath(path), path)
    return tuple(sorted(seen.values()))


def scan_directories(paths: tuple[str, ...]) -> tuple[DirectoryState, ...]:
    """Read each directory's ``meta.properties`` without changing anything."""
    states = []
    for path in paths:
        try:
            states.append(DirectoryState(path, meta=read_meta_properties(path)))
        except StorageError as exc:
            states.append(DirectoryState(path, error=str(exc)))
    return tuple(states)
