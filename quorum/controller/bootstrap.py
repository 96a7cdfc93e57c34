"""The records the first active controller writes into an empty metadata log.

Kafka's activation writes the bootstrap metadata (``bootstrap.checkpoint``,
from ``kafka-storage format``) when the log holds no metadata.version yet.
pykraft's bootstrap is only the metadata.version feature level from the
controller's configuration; a controller that finds one already set writes
nothing (a later leader, or a restart).
"""

from __future__ import annotations

from quorum.controller.broker_registration import METADATA_VERSION_FEATURE
from quorum.controller.image import MetadataImage
from quorum.controller.results import ControllerContext
from quorum.wire.messages.metadata_records import FeatureLevelRecord
from quorum.wire.metadata_serde import MetadataRecord

__all__ = ["bootstrap_records"]


def bootstrap_records(image: MetadataImage, ctx: ControllerContext) -> list[MetadataRecord]:
    if image.features.get(METADATA_VERSION_FEATURE):
        return []
    return [
        FeatureLevelRecord(
            name=METADATA_VERSION_FEATURE, feature_level=ctx.config.metadata_version_level
        )
    ]
