"""Random controller requests: admin requests and a partition leader's AlterPartition.

Admin requests read the latest committed image (what an admin client would
have seen), a leader's AlterPartition reads that broker's own, possibly
stale, view. Some requests are wrong on purpose: duplicate topics, bad
replication factors, shrinking partition counts, unknown partitions, stale
or future leader and partition epochs.
"""

from __future__ import annotations

import random
from typing import Final

from quorum.controller.image import MetadataImage, PartitionRegistration, TopicImage
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
from quorum.wire.messages.create_partitions import (
    CreatePartitionsRequest,
    CreatePartitionsRequestTopic,
)
from quorum.wire.messages.elect_leaders import (
    ElectLeadersRequest,
    ElectLeadersRequestTopicPartitions,
)
from quorum.wire.messages.partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsRequestReassignablePartition,
    AlterPartitionReassignmentsRequestReassignableTopic,
)
from quorum.wire.messages.topics import (
    CreateTopicsRequest,
    CreateTopicsRequestTopic,
    DeleteTopicsRequest,
)

__all__ = [
    "TOPIC_NAMES",
    "alter_partition_request",
    "alter_reassignments_request",
    "alter_topic_config_request",
    "create_partitions_request",
    "create_topics_request",
    "delete_topics_request",
    "elect_leaders_request",
]

# "a.b" and "a_b" collide in Kafka's metric names: one of them must be refused
TOPIC_NAMES: Final = ("orders", "clicks", "audit", "a.b", "a_b", "logs", "metrics")
# -1: the broker default; 0 and 7 are refused (7 is more than there are brokers)
_REPLICATION_FACTORS: Final = (-1, -1, 1, 1, 2, 2, 2, 3, 3, 0, 7)
_PARTITION_COUNTS: Final = (-1, 1, 2, 3, 4)


def create_topics_request(rng: random.Random) -> CreateTopicsRequest:
    topics = tuple(
        CreateTopicsRequestTopic(
            name=rng.choice(TOPIC_NAMES),
            num_partitions=rng.choice(_PARTITION_COUNTS),
            replication_factor=rng.choice(_REPLICATION_FACTORS),
        )
        for _ in range(rng.choice((1, 1, 1, 2)))
    )
    return CreateTopicsRequest(topics=topics, timeout_ms=30_000)


def delete_topics_request(rng: random.Random) -> DeleteTopicsRequest:
    names = tuple(sorted({rng.choice(TOPIC_NAMES) for _ in range(rng.choice((1, 1, 2)))}))
    return DeleteTopicsRequest(topic_names=names, timeout_ms=30_000)


def _some_topic(rng: random.Random, image: MetadataImage) -> TopicImage | None:
    names = sorted(image.topic_ids_by_name)
    return image.topic(rng.choice(names)) if names else None


def create_partitions_request(
    rng: random.Random, image: MetadataImage
) -> CreatePartitionsRequest:
    topic = _some_topic(rng, image)
    if topic is None or rng.random() < 0.15:
        name, count = rng.choice(TOPIC_NAMES), rng.randint(1, 5)
    else:
        name, count = topic.name, len(topic.partitions) + rng.choice((-1, 0, 1, 1, 2))
    return CreatePartitionsRequest(
        topics=(CreatePartitionsRequestTopic(name=name, count=count, assignments=None),),
        timeout_ms=30_000,
    )


def elect_leaders_request(rng: random.Random, image: MetadataImage) -> ElectLeadersRequest:
    election_type = rng.choice((0, 0, 1))
    topic = _some_topic(rng, image)
    if topic is None or rng.random() < 0.2:
        return ElectLeadersRequest(election_type=election_type, topic_partitions=None)
    # one index past the end now and then: UNKNOWN_TOPIC_OR_PARTITION
    indexes = sorted({rng.randrange(len(topic.partitions) + 1) for _ in range(2)})
    return ElectLeadersRequest(
        election_type=election_type,
        topic_partitions=(
            ElectLeadersRequestTopicPartitions(topic=topic.name, partitions=tuple(indexes)),
        ),
    )


def _new_isr(rng: random.Random, p: PartitionRegistration) -> list[int] | None:
    outside = [r for r in p.replicas if r not in p.isr]
    followers = [r for r in p.isr if r != p.leader]
    if followers and (not outside or rng.random() < 0.5):
        dropped = rng.choice(followers)
        return [r for r in p.isr if r != dropped]
    if outside:
        return [*p.isr, rng.choice(outside)]
    return None


def _epochs(rng: random.Random, p: PartitionRegistration) -> tuple[int, int]:
    """The leader's epochs, now and then deliberately stale or from the future."""
    leader_epoch, partition_epoch = p.leader_epoch, p.partition_epoch
    roll = rng.random()
    if roll < 0.06:
        leader_epoch -= 1
    elif roll < 0.12:
        partition_epoch -= 1
    elif roll < 0.15:
        partition_epoch += 1
    return leader_epoch, partition_epoch


def alter_partition_request(
    rng: random.Random, view: MetadataImage, broker_id: int, broker_epoch: int
) -> tuple[AlterPartitionRequest, int] | None:
    """An ISR shrink or expand from ``broker_id`` for a partition it leads in ``view``."""
    led = [(t, i, t.partitions[i]) for t, i in view.partitions_led_by(broker_id)]
    if not led:
        return None
    topic, index, p = rng.choice(led)
    isr = _new_isr(rng, p)
    if isr is None:
        return None
    leader_epoch, partition_epoch = _epochs(rng, p)
    version = rng.choice((1, 2, 3, 3))

    def state(replica: int) -> AlterPartitionRequestBrokerState:
        broker = view.broker(replica)
        return AlterPartitionRequestBrokerState(
            broker_id=replica, broker_epoch=-1 if broker is None else broker.epoch
        )

    part = AlterPartitionRequestPartition(
        partition_index=index,
        leader_epoch=leader_epoch,
        new_isr=tuple(isr) if version < 3 else (),
        new_isr_with_epochs=tuple(state(r) for r in isr) if version >= 3 else (),
        # a recovering leader reports RECOVERED once it takes followers back
        leader_recovery_state=0 if len(isr) > 1 else int(p.leader_recovery_state),
        partition_epoch=partition_epoch,
    )
    data = AlterPartitionRequestTopic(
        topic_name=topic.name if version < 2 else "",
        topic_id=topic.topic_id,
        partitions=(part,),
    )
    request = AlterPartitionRequest(broker_id=broker_id, broker_epoch=broker_epoch, topics=(data,))
    return request, version


def alter_reassignments_request(
    rng: random.Random, image: MetadataImage, broker_ids: list[int]
) -> AlterPartitionReassignmentsRequest | None:
    """Move one partition to other brokers (some ids unknown), or cancel its move."""
    topic = _some_topic(rng, image)
    if topic is None:
        return None
    index = rng.randrange(len(topic.partitions))
    current = topic.partitions[index]
    target: tuple[int, ...] | None = None
    if rng.random() > 0.2:
        size = max(1, len(current.replicas) + rng.choice((-1, 0, 0, 1)))
        pool = [*broker_ids, 9] if rng.random() < 0.1 else broker_ids
        target = tuple(rng.sample(pool, min(size, len(pool))))
    part = AlterPartitionReassignmentsRequestReassignablePartition(
        partition_index=index, replicas=target
    )
    return AlterPartitionReassignmentsRequest(
        topics=(AlterPartitionReassignmentsRequestReassignableTopic(
            name=topic.name, partitions=(part,)
        ),),
    )


def alter_topic_config_request(
    rng: random.Random, image: MetadataImage
) -> IncrementalAlterConfigsRequest | None:
    """Turn unclean leader election on or off for a topic, or change min.insync.replicas."""
    topic = _some_topic(rng, image)
    if topic is None:
        return None
    if rng.random() < 0.6:
        name, value = "unclean.leader.election.enable", rng.choice(("true", "false"))
    else:
        name, value = "min.insync.replicas", str(rng.randint(1, 3))
    operation = 1 if rng.random() < 0.2 else 0  # DELETE or SET
    config = IncrementalAlterConfigsRequestAlterableConfig(
        name=name, config_operation=operation, value=None if operation == 1 else value
    )
    return IncrementalAlterConfigsRequest(
        resources=(IncrementalAlterConfigsRequestAlterConfigsResource(
            resource_type=2, resource_name=topic.name, configs=(config,)
        ),),
    )
