"""A metadata image built by folding records, for the replication tests.

``World`` keeps an image and the log offset it has reached; brokers are
registered with RegisterBrokerRecord and unfenced with a
BrokerRegistrationChangeRecord, as the cluster side would. ``run`` calls a
command, folds its records and checks the partition invariants (and that no
epoch went back) on every image it produces.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import attrs

from quorum.controller.delta import fold_records
from quorum.controller.image import (
    EMPTY_IMAGE,
    ConfigResourceType,
    MetadataImage,
    PartitionRegistration,
    Provenance,
    TopicImage,
)
from quorum.controller.partition_change import (
    changes_for_broker_removal,
    changes_for_broker_unfence,
)
from quorum.controller.results import ControllerConfig, ControllerContext, ControllerResult
from quorum.wire.messages.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionRequestBrokerState,
    AlterPartitionRequestPartition,
    AlterPartitionRequestTopic,
)
from quorum.wire.messages.configs import (
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequestAlterableConfig,
    IncrementalAlterConfigsRequestAlterConfigsResource,
)
from quorum.wire.messages.metadata_records import (
    BrokerRegistrationChangeRecord,
    RegisterBrokerRecord,
    RegisterBrokerRecordBrokerEndpoint,
)
from quorum.wire.messages.topics import (
    CreateTopicsRequest,
    CreateTopicsRequestAssignment,
    CreateTopicsRequestConfig,
    CreateTopicsRequestTopic,
)
from quorum.wire.metadata_serde import MetadataRecord
from tests.unit.controller.invariants import assert_partition_invariants

__all__ = ["CONFIG", "World", "alter_isr_request", "new_topic", "set_topic_config"]

R = TypeVar("R")
CONFIG = ControllerConfig(node_id=3000, cluster_id="replication-test-cluster")


def new_topic(
    name: str,
    partitions: int = 1,
    rf: int = 1,
    *,
    configs: dict[str, str | None] | None = None,
    assignments: Sequence[Sequence[int]] = (),
) -> CreateTopicsRequestTopic:
    return CreateTopicsRequestTopic(
        name=name,
        num_partitions=-1 if assignments else partitions,
        replication_factor=-1 if assignments else rf,
        assignments=tuple(
            CreateTopicsRequestAssignment(partition_index=i, broker_ids=tuple(b))
            for i, b in enumerate(assignments)
        ),
        configs=tuple(
            CreateTopicsRequestConfig(name=k, value=v) for k, v in (configs or {}).items()
        ),
    )


def set_topic_config(topic: str, name: str, value: str | None) -> IncrementalAlterConfigsRequest:
    op = 0 if value is not None else 1
    return IncrementalAlterConfigsRequest(resources=(
        IncrementalAlterConfigsRequestAlterConfigsResource(
            resource_type=ConfigResourceType.TOPIC,
            resource_name=topic,
            configs=(IncrementalAlterConfigsRequestAlterableConfig(
                name=name, config_operation=op, value=value
            ),),
        ),
    ))


def alter_isr_request(
    image: MetadataImage,
    topic: str,
    index: int,
    isr: Sequence[int],
    *,
    sender: int | None = None,
    leader_epoch: int | None = None,
    partition_epoch: int | None = None,
    recovery_state: int = 0,
    version: int = 3,
) -> AlterPartitionRequest:
    """An AlterPartition from the leader (or ``sender``) with the current epochs."""
    found = image.topic(topic)
    assert found is not None
    current = found.partitions[index]
    broker_id = current.leader if sender is None else sender
    broker = image.broker(broker_id)
    states = tuple(
        AlterPartitionRequestBrokerState(
            broker_id=b, broker_epoch=-1 if image.broker(b) is None else image.brokers[b].epoch
        )
        for b in isr
    )
    part = AlterPartitionRequestPartition(
        partition_index=index,
        leader_epoch=current.leader_epoch if leader_epoch is None else leader_epoch,
        new_isr=tuple(isr) if version < 3 else (),
        new_isr_with_epochs=states if version >= 3 else (),
        leader_recovery_state=recovery_state,
        partition_epoch=current.partition_epoch if partition_epoch is None else partition_epoch,
    )
    return AlterPartitionRequest(
        broker_id=broker_id,
        broker_epoch=-1 if broker is None else broker.epoch,
        topics=(AlterPartitionRequestTopic(
            topic_name=topic if version < 2 else "",
            topic_id=found.topic_id,
            partitions=(part,),
        ),),
    )


@attrs.define
class World:
    image: MetadataImage = EMPTY_IMAGE
    offset: int = 0
    config: ControllerConfig = CONFIG
    rng: random.Random = attrs.field(factory=lambda: random.Random(7))

    def ctx(self) -> ControllerContext:
        return ControllerContext(
            config=self.config, now_ms=1_000_000, next_offset=self.offset, rng=self.rng
        )

    def fold(self, records: Sequence[MetadataRecord]) -> MetadataImage:
        previous = self.image
        self.offset += len(records)
        self.image = fold_records(self.image, list(records), Provenance(self.offset, 1))
        assert_partition_invariants(self.image, previous)
        return self.image

    def run(
        self,
        command: Callable[[MetadataImage, Any, int, ControllerContext], ControllerResult[R]],
        request: Any,
        version: int,
    ) -> ControllerResult[R]:
        result = command(self.image, request, version, self.ctx())
        self.fold(result.records)
        return result

    # -- brokers ---------------------------------------------------------------------------

    def register(self, *broker_ids: int, rack: str | None = None, active: bool = True) -> None:
        for broker_id in broker_ids:
            self.fold([RegisterBrokerRecord(
                broker_id=broker_id,
                incarnation_id=uuid.UUID(int=self.rng.getrandbits(128)),
                broker_epoch=self.offset,
                end_points=(RegisterBrokerRecordBrokerEndpoint(
                    name="PLAINTEXT", host="localhost", port=9092 + broker_id,
                    security_protocol=0,
                ),),
                rack=rack,
                fenced=True,
            )])
            if active:
                self.unfence(broker_id)

    def epoch(self, broker_id: int) -> int:
        return self.image.brokers[broker_id].epoch

    def fence(self, broker_id: int) -> list[MetadataRecord]:
        records: list[MetadataRecord] = list(changes_for_broker_removal(self.image, broker_id))
        records.append(BrokerRegistrationChangeRecord(
            broker_id=broker_id, broker_epoch=self.epoch(broker_id), fenced=1
        ))
        self.fold(records)
        return records

    def shut_down(self, broker_id: int) -> None:
        records: list[MetadataRecord] = [BrokerRegistrationChangeRecord(
            broker_id=broker_id, broker_epoch=self.epoch(broker_id), in_controlled_shutdown=1
        )]
        records += changes_for_broker_removal(self.image, broker_id)
        self.fold(records)

    def unfence(self, broker_id: int) -> list[MetadataRecord]:
        self.fold([BrokerRegistrationChangeRecord(
            broker_id=broker_id, broker_epoch=self.epoch(broker_id), fenced=-1
        )])
        records = list(changes_for_broker_unfence(self.image, broker_id))
        self.fold(records)
        return list(records)

    # -- topics ----------------------------------------------------------------------------

    def create(self, *topics: CreateTopicsRequestTopic) -> None:
        from quorum.controller.replication_control import create_topics

        result = self.run(create_topics, CreateTopicsRequest(topics=topics), 5)
        assert all(t.error_code == 0 for t in result.response.topics), result.response

    def topic(self, name: str) -> TopicImage:
        found = self.image.topic(name)
        assert found is not None, f"no topic {name}"
        return found

    def partition(self, name: str, index: int = 0) -> PartitionRegistration:
        return self.topic(name).partitions[index]
