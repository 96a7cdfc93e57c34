"""The ``metadata.version`` pykraft claims when it formats storage.

pykraft claims **3.9-IV0** (feature level 21): the newest Kafka metadata
version whose metadata records and inter-broker behaviour pykraft means to
implement. It is the first level that allows ``kraft.version`` 1 (KIP-853),
and it precedes 4.0-IV0 (group.version bootstrap, KIP-848), 4.0-IV1 (ELR,
KIP-966), 4.0-IV2 (transaction version 2, KIP-890) and 4.0-IV3 (async
remote ListOffsets, KIP-1075), none of which pykraft implements. Kafka
prints the version as ``<release>-<sub version>`` (``MetadataVersion.toString``).
"""

from __future__ import annotations

from typing import Final

from attrs import frozen

__all__ = ["PYKRAFT_METADATA_VERSION", "MetadataVersion"]


@frozen
class MetadataVersion:
    release: str
    sub_version: str
    feature_level: int

    def __str__(self) -> str:
        return f"{self.release}-{self.sub_version}"


PYKRAFT_METADATA_VERSION: Final = MetadataVersion("3.9", "IV0", 21)
