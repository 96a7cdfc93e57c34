"""A small cluster for the broker lifecycle tests: an image, a clock, sessions.

``Cluster`` runs the cluster commands against its image the way the active
controller does (the result's records fold at the offsets they would get),
checks the partition invariants after every fold, and checks that a rejected
request wrote nothing and left the image alone. Topics are written as raw
TopicRecord/PartitionRecords so these tests do not depend on placement.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Sequence
from typing import Any

import attrs

from quorum.controller.bootstrap import bootstrap_records
from quorum.controller.broker_sessions import BrokerSessions
from quorum.controller.cluster_control import (
    broker_heartbeat,
    fence_stale_brokers,
    register_broker,
    unregister_broker,
)
from quorum.controller.delta import fold_records
from quorum.controller.image import (
    EMPTY_IMAGE,
    MetadataImage,
    PartitionRegistration,
    Provenance,
)
from quorum.controller.results import ControllerConfig, ControllerContext, ControllerResult
from quorum.wire.messages.broker_lifecycle import (
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationRequestFeature,
    BrokerRegistrationRequestListener,
    BrokerRegistrationResponse,
)
from quorum.wire.messages.metadata_records import PartitionRecord, TopicRecord
from quorum.wire.messages.unregister_broker import (
    UnregisterBrokerRequest,
    UnregisterBrokerResponse,
)
from quorum.wire.metadata_serde import MetadataRecord
from tests.unit.controller.invariants import assert_partition_invariants

__all__ = ["CLUSTER_ID", "CONFIG", "SESSION_MS", "Cluster", "registration_request"]

CLUSTER_ID = "cluster-control-test"
SESSION_MS = 9000
CONFIG = ControllerConfig(
    node_id=3000, cluster_id=CLUSTER_ID, broker_session_timeout_ms=SESSION_MS
)


def registration_request(
    broker_id: int,
    incarnation: uuid.UUID,
    *,
    cluster_id: str = CLUSTER_ID,
    metadata_version: tuple[int, int] | None = (1, 21),
    rack: str | None = None,
) -> BrokerRegistrationRequest:
    features: tuple[BrokerRegistrationRequestFeature, ...] = ()
    if metadata_version is not None:
        features = (
            BrokerRegistrationRequestFeature(
                name="metadata.version",
                min_supported_version=metadata_version[0],
                max_supported_version=metadata_version[1],
            ),
        )
    return BrokerRegistrationRequest(
        broker_id=broker_id,
        cluster_id=cluster_id,
        incarnation_id=incarnation,
        listeners=(
            BrokerRegistrationRequestListener(
                name="PLAINTEXT", host=f"broker{broker_id}", port=9092, security_protocol=0
            ),
        ),
        features=features,
        rack=rack,
    )


@attrs.define
class Cluster:
    image: MetadataImage = EMPTY_IMAGE
    offset: int = 0
    now_ms: int = 1_000_000
    sessions: BrokerSessions = attrs.field(factory=BrokerSessions)
    incarnations: dict[int, uuid.UUID] = attrs.field(factory=dict)
    rng: random.Random = attrs.field(factory=lambda: random.Random(11))

    def __attrs_post_init__(self) -> None:
        self.fold(bootstrap_records(self.image, self.ctx()))

    def ctx(self) -> ControllerContext:
        return ControllerContext(
            config=CONFIG, now_ms=self.now_ms, next_offset=self.offset, rng=self.rng
        )

    def fold(self, records: Sequence[MetadataRecord]) -> None:
        previous = self.image
        self.offset += len(records)
        self.image = fold_records(self.image, list(records), Provenance(self.offset, 1))
        assert_partition_invariants(self.image, previous)

    def apply(self, result: ControllerResult[Any]) -> ControllerResult[Any]:
        self.fold(result.records)
        return result

    def rejected(self, result: ControllerResult[Any], before: MetadataImage) -> None:
        """A rejection writes nothing (and nothing here changed the image)."""
        assert result.records == ()
        assert self.image == before

    # -- commands --------------------------------------------------------------------------

    def register(
        self, broker_id: int, *, new_incarnation: bool = True, **kwargs: Any
    ) -> ControllerResult[BrokerRegistrationResponse]:
        if new_incarnation or broker_id not in self.incarnations:
            self.incarnations[broker_id] = uuid.UUID(int=self.rng.getrandbits(128))
        request = registration_request(broker_id, self.incarnations[broker_id], **kwargs)
        return self.apply(register_broker(self.image, request, 4, self.ctx(), self.sessions))

    def heartbeat(
        self,
        broker_id: int,
        *,
        offset: int | None = None,
        epoch: int | None = None,
        want_fence: bool = False,
        want_shut_down: bool = False,
    ) -> ControllerResult[BrokerHeartbeatResponse]:
        """A heartbeat; by default from a broker that has applied every record so far."""
        broker = self.image.broker(broker_id)
        request = BrokerHeartbeatRequest(
            broker_id=broker_id,
            broker_epoch=(broker.epoch if broker else -1) if epoch is None else epoch,
            current_metadata_offset=self.offset - 1 if offset is None else offset,
            want_fence=want_fence,
            want_shut_down=want_shut_down,
        )
        return self.apply(broker_heartbeat(self.image, request, 1, self.ctx(), self.sessions))

    def unregister(self, broker_id: int) -> ControllerResult[UnregisterBrokerResponse]:
        request = UnregisterBrokerRequest(broker_id=broker_id)
        return self.apply(unregister_broker(self.image, request, 0, self.ctx(), self.sessions))

    def fence_stale(self) -> ControllerResult[None]:
        return self.apply(fence_stale_brokers(self.image, self.ctx(), self.sessions))

    def start(self, *broker_ids: int) -> None:
        """Register and unfence brokers."""
        for broker_id in broker_ids:
            assert self.register(broker_id).response.error_code == 0
            response = self.heartbeat(broker_id).response
            assert response.error_code == 0 and not response.is_fenced

    def advance(self, ms: int) -> None:
        self.now_ms += ms

    # -- topics ----------------------------------------------------------------------------

    def add_topic(self, name: str, *replicas: Sequence[int]) -> uuid.UUID:
        """A topic with one partition per replica list; ISR = active replicas."""
        topic_id = uuid.UUID(int=self.rng.getrandbits(128))
        records: list[MetadataRecord] = [TopicRecord(name=name, topic_id=topic_id)]
        active = set(self.image.active_broker_ids())
        for index, assignment in enumerate(replicas):
            isr = tuple(r for r in assignment if r in active)
            assert isr, f"{name}-{index}: no active replica in {assignment}"
            records.append(
                PartitionRecord(
                    partition_id=index,
                    topic_id=topic_id,
                    replicas=tuple(assignment),
                    isr=isr,
                    leader=isr[0],
                )
            )
        self.fold(records)
        return topic_id

    def partition(self, name: str, index: int = 0) -> PartitionRegistration:
        topic = self.image.topic(name)
        assert topic is not None
        return topic.partitions[index]
