"""Formatted storage: ``meta.properties``, ``kraft storage format`` and ``info``,
and the checks a node runs on its directories before it starts."""

from quorum.storage.directories import DirectoryState, configured_directories, scan_directories
from quorum.storage.errors import NotFormattedError, StorageError
from quorum.storage.format import (
    DirectoryKind,
    FormatResult,
    FormattedDirectory,
    format_storage,
    validate_cluster_id,
)
from quorum.storage.info import StorageInfo, storage_info
from quorum.storage.meta_properties import (
    META_PROPERTIES_NAME,
    MetaProperties,
    read_meta_properties,
    write_meta_properties,
)
from quorum.storage.metadata_version import PYKRAFT_METADATA_VERSION, MetadataVersion
from quorum.storage.startup import METADATA_PARTITION_DIR, check_storage_for_start

__all__ = [
    "METADATA_PARTITION_DIR",
    "META_PROPERTIES_NAME",
    "PYKRAFT_METADATA_VERSION",
    "DirectoryKind",
    "DirectoryState",
    "FormatResult",
    "FormattedDirectory",
    "MetaProperties",
    "MetadataVersion",
    "NotFormattedError",
    "StorageError",
    "StorageInfo",
    "check_storage_for_start",
    "configured_directories",
    "format_storage",
    "read_meta_properties",
    "scan_directories",
    "storage_info",
    "validate_cluster_id",
    "write_meta_properties",
]
