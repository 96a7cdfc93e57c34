"""``OfflineReport``: when the active controller logs its offline partitions.

The alarm is a log line naming how many partitions have no leader and a few
of them. It is written when the set first becomes non-empty and when it
empties again, and in between at most once every ``REPORT_INTERVAL_MS``: a
fencing of many brokers changes the set at every part it publishes (every
few milliseconds), and a line per part buried everything else in the log
(280 lines in a minute of a 1,000,000-partition restart). The
``OfflinePartitionsCount`` gauge is exact at every moment; the log is for
people.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Collection
from typing import Final

from quorum.controller.image import MetadataImage, TopicPartition
from quorum.controller.partition_index import PartitionKey

__all__ = ["REPORT_INTERVAL_MS", "SAMPLE_SIZE", "OfflineReport"]

REPORT_INTERVAL_MS: Final = 10_000
SAMPLE_SIZE: Final = 20

logger = logging.getLogger(__name__)


class OfflineReport:
    def __init__(self) -> None:
        self._changes_seen = 0  # the index's count of leaderless changes last looked at
        self._reported_count = 0
        self._reported_ms: int | None = None

    def changed(
        self,
        leaderless: Collection[PartitionKey],
        changes: int,
        image: MetadataImage,
        now_ms: int,
    ) -> str | None:
        """Look at the leaderless set after a publication (``changes``: the index's count
        of additions and removals so far); return the line logged, if one was."""
        if changes == self._changes_seen:
            return None
        count = len(leaderless)
        if count and self._reported_count and self._reported_ms is not None and (
            now_ms - self._reported_ms < REPORT_INTERVAL_MS
        ):
            return None  # still offline, said recently: the next change after the interval
        self._changes_seen = changes
        self._reported_count = count
        self._reported_ms = now_ms
        if not count:
            line = "no partition is offline"
            logger.info(line)
            return line
        # a bounded sample: sorting 100,000 offline partitions would stall the node
        sample = sorted(
            TopicPartition(topic.name, index)
            for topic_id, index in itertools.islice(leaderless, SAMPLE_SIZE)
            if (topic := image.topics_by_id.get(topic_id)) is not None
        )
        more = f" and {count - len(sample)} more" if count > len(sample) else ""
        line = (
            f"{count} partition(s) offline, no eligible leader in the ISR and unclean "
            f"election not enabled for them: {', '.join(map(str, sample))}{more}"
        )
        logger.warning("%s", line)
        return line
