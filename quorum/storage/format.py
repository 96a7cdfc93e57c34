"""``format_storage``: write ``meta.properties`` into every directory of a node.

Follows Kafka's ``Formatter.doFormat``: existing ``meta.properties`` files
must agree with the requested cluster id and the configured node id;
formatted directories are an error unless ``ignore_formatted``; unreadable
directories are skipped; every newly formatted directory gets its own
random ``directory.id``. pykraft formats static quorums only (no
``--standalone`` / ``--initial-controllers`` bootstrap snapshot yet), and
writes no ``bootstrap.checkpoint``: the metadata version is a constant.
"""

from __future__ import annotations

import enum
import os
import uuid
from collections.abc import Callable, Iterable

from attrs import frozen

from quorum.config import ServerConfig
from quorum.storage.directories import DirectoryState, configured_directories, scan_directories
from quorum.storage.errors import StorageError
from quorum.storage.meta_properties import (
    META_PROPERTIES_NAME,
    MetaProperties,
    is_reserved_directory_id,
    write_meta_properties,
)
from quorum.storage.metadata_version import PYKRAFT_METADATA_VERSION, MetadataVersion
from quorum.wire.errors import WireDecodeError
from quorum.wire.uuids import random_uuid, uuid_from_str, uuid_to_str

__all__ = [
    "DirectoryKind",
    "FormatResult",
    "FormattedDirectory",
    "check_identity",
    "format_storage",
    "validate_cluster_id",
]


class DirectoryKind(enum.Enum):
    """How ``kafka-storage format`` names a directory in its output."""

    DATA = "data directory"
    METADATA = "metadata directory"


@frozen
class FormattedDirectory:
    path: str
    kind: DirectoryKind
    meta: MetaProperties


@frozen(kw_only=True)
class FormatResult:
    """What ``format_storage`` did; ``formatted`` is empty when every usable
    directory was already formatted."""

    metadata_version: MetadataVersion
    formatted: tuple[FormattedDirectory, ...]
    already_formatted: tuple[str, ...]
    unreadable: tuple[str, ...]


def validate_cluster_id(cluster_id: str) -> str:
    """A cluster id must be Kafka's 22-character base64url UUID text."""
    try:
        uuid_from_str(cluster_id)
    except WireDecodeError as exc:
        raise StorageError(
            f"Cluster ID string {cluster_id} does not appear to be a valid UUID: {exc}"
        ) from None
    return cluster_id


def check_identity(
    states: Iterable[DirectoryState], *, cluster_id: str | None, node_id: int
) -> None:
    """Kafka's ``MetaPropertiesEnsemble.verify``: one cluster, one node, distinct
    directory ids. ``cluster_id=None`` takes the first directory's."""
    seen: dict[uuid.UUID, str] = {}
    for state in states:
        if state.meta is None:
            continue
        path = os.path.join(state.path, META_PROPERTIES_NAME)
        meta = state.meta
        if cluster_id is None:
            cluster_id = meta.cluster_id
        elif meta.cluster_id != cluster_id:
            raise StorageError(
                f"Invalid cluster.id in: {path}. Expected {cluster_id}, but read {meta.cluster_id}"
            )
        if meta.node_id != node_id:
            raise StorageError(
                f"Stored node id {meta.node_id} doesn't match previous node id {node_id} in "
                f"{path}. If you moved your data, make sure your configured node id matches. If "
                "you intend to create a new node, you should remove all data in your data "
                "directories."
            )
        if meta.directory_id is None:
            continue
        text = uuid_to_str(meta.directory_id)
        if is_reserved_directory_id(meta.directory_id):
            raise StorageError(f"Invalid reserved directory ID {text} found in {state.path}")
        if meta.directory_id in seen:
            raise StorageError(
                f"Duplicate directory ID {text} found. It was the ID of "
                f"{seen[meta.directory_id]}, but also of {state.path}"
            )
        seen[meta.directory_id] = state.path


def _require_static_quorum(config: ServerConfig) -> None:
    if config.is_controller and not config.quorum_voters:
        raise StorageError(
            "Because controller.quorum.voters is not set on this controller, it cannot be "
            "formatted: pykraft supports only a static quorum so far (set "
            "controller.quorum.voters on every node); Kafka's --standalone, "
            "--initial-controllers and --no-initial-controllers are not implemented."
        )


def _new_directory_id(
    taken: set[uuid.UUID], new_directory_id: Callable[[], uuid.UUID]
) -> uuid.UUID:
    while True:
        candidate = new_directory_id()
        if candidate not in taken and not is_reserved_directory_id(candidate):
            taken.add(candidate)
            return candidate


def _write(state: DirectoryState, meta: MetaProperties) -> None:
    try:
        os.makedirs(state.path, exist_ok=True)
    except OSError as exc:
        raise StorageError(
            f"Error while writing meta.properties file {state.path}: {exc}"
        ) from None
    write_meta_properties(state.path, meta)


def format_storage(
    config: ServerConfig,
    cluster_id: str,
    ignore_formatted: bool = False,
    *,
    new_directory_id: Callable[[], uuid.UUID] = random_uuid,
) -> FormatResult:
    """Format every empty directory of ``config``; raises StorageError with
    ``kafka-storage``'s messages when it must not."""
    validate_cluster_id(cluster_id)
    _require_static_quorum(config)
    states = scan_directories(configured_directories(config))
    check_identity(states, cluster_id=cluster_id, node_id=config.node_id)
    formatted = [s.path for s in states if s.is_formatted]
    if formatted and not ignore_formatted:
        raise StorageError(
            f"Log directory {formatted[0]} is already formatted. Use --ignore-formatted to "
            "ignore this directory and format the others."
        )
    unreadable = tuple(s.path for s in states if s.error is not None)
    empty = [s for s in states if s.is_empty]
    if unreadable and not empty and not formatted:
        raise StorageError("No available log directories to format.")
    taken = {s.meta.directory_id for s in states if s.meta and s.meta.directory_id}
    metadata_dir = os.path.normpath(config.metadata_log_dir)
    done = []
    for state in empty:
        meta = MetaProperties(
            cluster_id=cluster_id,
            node_id=config.node_id,
            directory_id=_new_directory_id(taken, new_directory_id),
        )
        is_metadata = os.path.normpath(state.path) == metadata_dir
        kind = DirectoryKind.METADATA if is_metadata else DirectoryKind.DATA
        _write(state, meta)
        done.append(FormattedDirectory(state.path, kind, meta))
    return FormatResult(
        metadata_version=PYKRAFT_METADATA_VERSION,
        formatted=tuple(done),
        already_formatted=tuple(formatted),
        unreadable=unreadable,
    )
