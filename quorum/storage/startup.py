"""``check_storage_for_start``: the storage checks a node runs before it starts.

Kafka's ``KafkaRaftServer.initializeLogDirs``: every directory must be
formatted, for one cluster and for this node id, with distinct directory
ids, and the metadata log must live only in the metadata directory. A
directory without ``directory.id`` (formatted by an old Kafka) gets one, as
Kafka does. Unlike Kafka, pykraft refuses to start with an unreadable data
directory instead of running without it.
"""

from __future__ import annotations

import os

import attrs

from quorum.config import ServerConfig
from quorum.storage.directories import DirectoryState, configured_directories, scan_directories
from quorum.storage.errors import NotFormattedError, StorageError
from quorum.storage.format import check_identity
from quorum.storage.meta_properties import MetaProperties, write_meta_properties
from quorum.wire.uuids import random_uuid

__all__ = ["METADATA_PARTITION_DIR", "check_storage_for_start"]

METADATA_PARTITION_DIR = "__cluster_metadata-0"


def _refuse_unusable(states: tuple[DirectoryState, ...], metadata_dir: str) -> None:
    for state in states:
        if state.error is not None:
            if os.path.normpath(state.path) == metadata_dir:
                raise StorageError(
                    f"Encountered I/O error in metadata log directory {state.path}. Cannot "
                    f"continue. ({state.error})"
                )
            raise StorageError(f"Cannot use log directory {state.path}: {state.error}")
        if state.meta is None:
            raise NotFormattedError(
                f"No `meta.properties` found in {state.path} (have you run `kraft storage "
                "format` to format the directory?)"
            )


def _refuse_stray_metadata_log(states: tuple[DirectoryState, ...], config: ServerConfig) -> None:
    metadata_dir = os.path.normpath(config.metadata_log_dir)
    for state in states:
        stray = os.path.join(state.path, METADATA_PARTITION_DIR)
        if os.path.normpath(state.path) != metadata_dir and os.path.exists(stray):
            raise StorageError(
                f"Found unexpected metadata location in data directory `{stray}` (the "
                f"configured metadata directory is {config.metadata_log_dir})."
            )


def _with_directory_ids(states: tuple[DirectoryState, ...]) -> tuple[DirectoryState, ...]:
    taken = {s.meta.directory_id for s in states if s.meta and s.meta.directory_id}
    result = []
    for state in states:
        assert state.meta is not None, "unformatted directories were refused"
        if state.meta.directory_id is None:
            directory_id = random_uuid()
            while directory_id in taken:
                directory_id = random_uuid()
            taken.add(directory_id)
            meta = attrs.evolve(state.meta, directory_id=directory_id)
            write_meta_properties(state.path, meta)
            state = attrs.evolve(state, meta=meta)
        result.append(state)
    return tuple(result)


def check_storage_for_start(config: ServerConfig) -> MetaProperties:
    """Refuse unformatted or mismatched storage; return the metadata
    directory's identity (cluster id, node id, its directory id)."""
    metadata_dir = os.path.normpath(config.metadata_log_dir)
    states = scan_directories(configured_directories(config))
    _refuse_unusable(states, metadata_dir)
    check_identity(states, cluster_id=None, node_id=config.node_id)
    _refuse_stray_metadata_log(states, config)
    states = _with_directory_ids(states)
    for state in states:
        if os.path.normpath(state.path) == metadata_dir and state.meta is not None:
            return state.meta
    raise AssertionError("the metadata directory is always among the configured directories")
