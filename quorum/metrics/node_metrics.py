"""What a node exports: its Raft state, its metadata image and its roles' own state.

Names are Kafka's JMX metrics in Prometheus' style (``kafka.controller:
type=KafkaController,name=OfflinePartitionsCount`` becomes
``kafka_controller_offline_partitions_count``), plus pykraft's image offset
and digest, so that a scraper can compare nodes. The image figures come from
every node (brokers hold the same image as controllers); the active
controller count and the controller event times only from controllers, the
broker state only from brokers; what the node's thread spends its time on
(``NodeActivity``: loop stalls, slices of work, records applied) from every
node that has one. The image's digest and counts are computed once per image
(``LatestImageSummary``): a 10,000-partition image takes tens of
milliseconds to hash, and scrapes repeat.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import attrs
import trio

from quorum.controller.digest import ImageSummary, LatestImageSummary
from quorum.controller.image import MetadataImage
from quorum.metrics.activity import NodeActivity
from quorum.metrics.activity_families import activity_families, controller_event_families
from quorum.metrics.exposition import Family, Sample, gauge, render
from quorum.raft import RaftCore

__all__ = ["BrokerView", "NodeMetrics", "raft_families"]

# Kafka's raft metric "current-state" values, by the core's state class
_STATES = ("leader", "candidate", "prospective", "follower", "unattached", "resigned", "observer")


@attrs.frozen
class BrokerView:
    """A broker's own state: Kafka's BrokerState number and its broker epoch (-1: none)."""

    state: int
    epoch: int


def _state_name(core: RaftCore) -> str:
    role = core.role.lower()
    if not core.is_voter and role in ("follower", "unattached"):
        return "observer"
    return role if role in _STATES else "unattached"


def raft_families(core: RaftCore) -> list[Family]:
    """The Raft core's state (Kafka's raft-metrics group)."""
    log = core.log
    leader = core.leader_id
    hw = core.high_watermark
    state = _state_name(core)
    snapshot = log.latest_snapshot_id
    return [
        gauge("kafka_raft_current_epoch", "The quorum epoch this node is in.", core.epoch),
        gauge("kafka_raft_current_leader", "The leader this node knows (-1: none).",
              -1 if leader is None else leader),
        gauge("kafka_raft_high_watermark", "The high watermark this node knows (-1: none).",
              -1 if hw is None else hw),
        gauge("kafka_raft_log_end_offset", "End offset of the metadata log.", log.log_end_offset),
        gauge("kafka_raft_log_start_offset", "First offset of the metadata log.",
              log.log_start_offset),
        gauge("kafka_raft_latest_snapshot_offset",
              "End offset of the latest metadata snapshot (-1: none).",
              -1 if snapshot is None else snapshot.offset),
        Family(
            "kafka_raft_current_state", "The node's Raft state (1 for the current one).",
            tuple(Sample({"state": s}, float(s == state)) for s in _STATES),
        ),
    ]


class NodeMetrics:
    """The families of one node, built at scrape time from its live state."""

    def __init__(
        self,
        *,
        core: Callable[[], RaftCore],
        image: Callable[[], MetadataImage],
        controller_active: Callable[[], bool] | None = None,
        broker: Callable[[], BrokerView] | None = None,
        activity: NodeActivity | None = None,
        clock: Callable[[], float] = trio.current_time,
        extra: Callable[[], Awaitable[list[Family]]] | None = None,
    ) -> None:
        self._core = core
        self._extra = extra  # a role's own families (the broker's data plane)
        self._image = image
        self._controller_active = controller_active
        self._broker = broker
        self._activity = activity
        self._clock = clock  # the clock the node's NodeActivity is fed with
        self._summaries = LatestImageSummary.shared()

    async def families(self) -> list[Family]:
        families = raft_families(self._core())
        image = self._image()
        families += self._image_families(image, await self._summaries.of_async(image))
        if self._controller_active is not None:
            families.append(gauge(
                "kafka_controller_active_controller_count",
                "1 on the active controller, 0 on the others.", int(self._controller_active()),
            ))
        if self._broker is not None:
            broker = self._broker()
            families += [
                gauge("kafka_server_broker_state",
                      "Kafka's BrokerState: 1 starting, 2 recovery, 3 running, "
                      "6 pending controlled shutdown, 7 shutting down.", broker.state),
                gauge("kafka_server_broker_epoch", "This broker's epoch (-1: unregistered).",
                      broker.epoch),
            ]
        if self._activity is not None:
            snapshot = self._activity.snapshot(self._clock())
            families += activity_families(snapshot)
            if self._controller_active is not None:
                families += controller_event_families(snapshot)
        if self._extra is not None:
            families += await self._extra()
        return families

    async def text(self) -> str:
        return render(await self.families())

    def _image_families(self, image: MetadataImage, summary: ImageSummary) -> list[Family]:
        brokers = image.brokers.values()
        fenced = sum(1 for b in brokers if b.fenced)
        return [
            gauge("pykraft_metadata_image_offset",
                  "End offset (exclusive) of the records in this node's metadata image.",
                  image.provenance.offset),
            gauge("pykraft_metadata_image_epoch", "Epoch of the last record in the image.",
                  image.provenance.epoch),
            gauge("pykraft_metadata_image_info",
                  "The image's digest (equal images have equal digests).", 1,
                  digest=summary.digest),
            gauge("kafka_controller_offline_partitions_count",
                  "Partitions without a leader.", summary.offline_partition_count),
            gauge("kafka_controller_global_topic_count", "Topics in the image.",
                  len(image.topics_by_id)),
            gauge("kafka_controller_global_partition_count", "Partitions in the image.",
                  summary.partition_count),
            gauge("kafka_controller_preferred_replica_imbalance_count",
                  "Partitions whose leader is not their first replica.",
                  summary.preferred_imbalance_count),
            gauge("kafka_controller_active_broker_count", "Registered unfenced brokers.",
                  len(image.brokers) - fenced),
            gauge("kafka_controller_fenced_broker_count", "Registered fenced brokers.", fenced),
        ]
