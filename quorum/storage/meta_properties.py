"""``meta.properties``: the file that marks a directory as formatted.

Kafka's version 1 content (``MetaProperties.toProperties``) written the way
``PropertiesUtils.writePropertiesFile`` writes it: Java's ``Properties.store``
header (an empty comment and the date), the keys sorted, to
``meta.properties.tmp``, fsynced, renamed over ``meta.properties``, and the
directory fsynced so the rename survives a crash::

    #
    #Tue Oct 29 10:15:30 UTC 2024
    cluster.id=fMCL8kv1SWm87L_Md-I2hg
    directory.id=J8aAPcfLQt2bqs1JT_rMgQ
    node.id=1
    version=1
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from attrs import frozen

from quorum.config import ConfigError, format_properties, parse_properties
from quorum.storage.errors import StorageError
from quorum.wire.errors import WireDecodeError
from quorum.wire.uuids import uuid_from_str, uuid_to_str

__all__ = [
    "META_PROPERTIES_NAME",
    "MetaProperties",
    "is_reserved_directory_id",
    "read_meta_properties",
    "write_meta_properties",
]

META_PROPERTIES_NAME: Final = "meta.properties"
_KRAFT_VERSION: Final = 1
_LEGACY = (
    "The kafka configuration file appears to be for a cluster in KRaft mode, but the "
    "directories are formatted for legacy mode."
)


def is_reserved_directory_id(directory_id: uuid.UUID) -> bool:
    """Kafka reserves UUIDs whose high 64 bits are 0 and low 64 bits, read as a
    signed long, are below 100 (``DirectoryId.reserved``)."""
    high, low = divmod(directory_id.int, 1 << 64)
    signed_low = low - (1 << 64) if low >= 1 << 63 else low
    return high == 0 and signed_low < 100


@frozen(kw_only=True)
class MetaProperties:
    """The identity stored in one directory (``meta.properties`` version 1)."""

    cluster_id: str
    node_id: int
    directory_id: uuid.UUID | None

    def to_properties(self) -> dict[str, str]:
        values = {
            "version": str(_KRAFT_VERSION),
            "cluster.id": self.cluster_id,
            "node.id": str(self.node_id),
        }
        if self.directory_id is not None:
            values["directory.id"] = uuid_to_str(self.directory_id)
        return values

    @classmethod
    def from_properties(cls, values: Mapping[str, str]) -> MetaProperties:
        """Parse the file's settings with Kafka's rules; raises StorageError."""
        version_text = values.get("version", "0")
        try:
            version = int(version_text)
        except ValueError:
            raise StorageError(f"Invalid meta.properties version string '{version_text}'") from None
        if version == 0:
            raise StorageError(_LEGACY)
        if version != _KRAFT_VERSION:
            raise StorageError(f"Unknown meta.properties version number {version}")
        if "node.id" not in values:
            raise StorageError("Failed to find node.id")
        try:
            node_id = int(values["node.id"])
        except ValueError:
            raise StorageError("Unable to read node.id as a base-10 number.") from None
        if "cluster.id" not in values:
            raise StorageError("cluster.id was not found.")
        directory_id = None
        if "directory.id" in values:
            try:
                directory_id = uuid_from_str(values["directory.id"])
            except WireDecodeError as exc:
                raise StorageError(f"Unable to read directory.id as a Uuid: {exc}") from None
        return cls(cluster_id=values["cluster.id"], node_id=node_id, directory_id=directory_id)


def read_meta_properties(directory: str | Path) -> MetaProperties | None:
    """The directory's identity, or None when it has no ``meta.properties``
    (or does not exist). Raises StorageError for an unreadable or bad file."""
    path = Path(directory) / META_PROPERTIES_NAME
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise StorageError(f"Error loading {path}: {exc}") from None
    try:
        return MetaProperties.from_properties(parse_properties(text, source=str(path)))
    except ConfigError as exc:
        raise StorageError(f"Error loading {path}: {exc}") from None
    except StorageError as exc:
        raise StorageError(f"Error loading {path}: {exc}") from None


def _java_date() -> str:
    # java.util.Date.toString(), as Properties.store writes it
    return time.strftime("%a %b %d %H:%M:%S %Z %Y")


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_meta_properties(directory: str | Path, meta: MetaProperties) -> None:
    """Atomically replace ``<directory>/meta.properties`` (the directory must exist)."""
    target = Path(directory) / META_PROPERTIES_NAME
    temporary = target.with_name(META_PROPERTIES_NAME + ".tmp")
    data = format_properties(meta.to_properties(), comments=["", _java_date()])
    try:
        try:
            with open(temporary, "wb") as handle:
                handle.write(data.encode("utf-8"))
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, target)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
        # the rename is durable only once the directory entry is
        _fsync_directory(target.parent)
    except OSError as exc:
        raise StorageError(f"Error while writing meta.properties file {directory}: {exc}") from None
