"""Removing a topic removes its configs, whether or not the delta already changed them."""

from __future__ import annotations

import uuid

from quorum.controller.delta import fold_records
from quorum.controller.image import EMPTY_IMAGE, Provenance
from quorum.wire.messages import ConfigRecord, PartitionRecord, RemoveTopicRecord, TopicRecord

TOPIC_ID = uuid.UUID(int=5)


def test_a_config_deleted_and_its_topic_removed_in_one_delta_leave_no_config() -> None:
    base = fold_records(EMPTY_IMAGE, [
        TopicRecord(name="audit", topic_id=TOPIC_ID),
        PartitionRecord(partition_id=0, topic_id=TOPIC_ID, replicas=(1,), isr=(1,), leader=1,
                        leader_epoch=0, partition_epoch=0),
        ConfigRecord(resource_type=2, resource_name="audit", name="min.insync.replicas",
                     value="2"),
    ], Provenance(3, 1))
    changes = [
        ConfigRecord(resource_type=2, resource_name="audit", name="min.insync.replicas",
                     value=None),
        RemoveTopicRecord(topic_id=TOPIC_ID),
    ]
    together = fold_records(base, changes, Provenance(5, 1))
    one_by_one = fold_records(
        fold_records(base, changes[:1], Provenance(4, 1)), changes[1:], Provenance(5, 1)
    )
    assert together.configs == one_by_one.configs == {}
    assert together.topic("audit") is None
