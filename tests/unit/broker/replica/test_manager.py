"""Which partitions a broker hosts, and what each new image changes for it (pure)."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from broker.replica.manager import (
    PartitionRole,
    RecordingReplicaManager,
    assignment_changes,
    assignments_of,
)
from quorum.controller.delta import fold_records
from quorum.controller.image import EMPTY_IMAGE, Provenance
from quorum.wire.messages.metadata_records import RemoveTopicRecord
from quorum.wire.metadata_serde import MetadataRecord
from tests.unit.broker.records import change, fold, partition, register, topic, topic_id
from tests.unit.controller.image_strategies import histories

BROKERS: list[MetadataRecord] = [register(1, 0), register(2, 1), register(3, 2)]
# broker 1 leads p0, follows p1, is absent from p2
ORDERS: list[MetadataRecord] = [
    topic("orders"),
    partition("orders", 0, [1, 2]),
    partition("orders", 1, [2, 1]),
    partition("orders", 2, [2, 3]),
]


def test_a_new_topic_is_led_where_the_broker_leads_and_followed_where_it_only_replicates() -> None:
    before = fold(BROKERS)
    after = fold(ORDERS, before)
    changes = assignment_changes(before, after, 1)
    assert [(a.topic, a.partition, a.role) for a in changes.changed] == [
        ("orders", 0, PartitionRole.LEADER),
        ("orders", 1, PartitionRole.FOLLOWER),
    ]
    assert changes.removed == ()
    first = changes.changed[0]
    assert (first.topic_id, first.leader, first.isr, first.replicas) == (
        topic_id("orders"), 1, (1, 2), (1, 2)
    )


def test_a_leader_change_turns_a_follower_into_the_leader_with_the_next_epoch() -> None:
    before = fold([*BROKERS, *ORDERS])
    after = fold([change("orders", 1, leader=1)], before)
    [moved] = assignment_changes(before, after, 1).changed
    assert (moved.partition, moved.role, moved.leader, moved.leader_epoch) == (
        1, PartitionRole.LEADER, 1, 1
    )
    # the old leader sees the same partition change its role the other way
    [lost] = assignment_changes(before, after, 2).changed
    assert (lost.partition, lost.role) == (1, PartitionRole.FOLLOWER)


def test_an_isr_shrink_is_a_change_for_every_replica_but_not_for_other_brokers() -> None:
    before = fold([*BROKERS, *ORDERS])
    after = fold([change("orders", 0, isr=[1])], before)
    [shrunk] = assignment_changes(before, after, 1).changed
    assert (shrunk.isr, shrunk.partition_epoch, shrunk.leader_epoch) == ((1,), 1, 0)
    assert [a.partition for a in assignment_changes(before, after, 2).changed] == [0]
    assert not assignment_changes(before, after, 3)


def test_a_broker_moved_out_of_the_replicas_no_longer_hosts_the_partition() -> None:
    before = fold([*BROKERS, *ORDERS])
    after = fold([change("orders", 1, replicas=[2, 3], isr=[2, 3])], before)
    changes = assignment_changes(before, after, 1)
    assert changes.changed == ()
    assert [(a.topic, a.partition) for a in changes.removed] == [("orders", 1)]
    assert [a.partition for a in assignment_changes(before, after, 3).changed] == [1]


def test_a_deleted_topic_is_removed_from_every_broker_that_hosted_it() -> None:
    before = fold([*BROKERS, *ORDERS])
    after = fold([RemoveTopicRecord(topic_id=topic_id("orders"))], before)
    assert [a.partition for a in assignment_changes(before, after, 2).removed] == [0, 1, 2]
    assert [a.partition for a in assignment_changes(before, after, 1).removed] == [0, 1]


def test_a_topic_the_new_image_did_not_touch_yields_no_change() -> None:
    before = fold([*BROKERS, *ORDERS])
    after = fold([topic("audit"), partition("audit", 0, [3])], before)
    assert not assignment_changes(before, after, 1)
    assert [a.topic for a in assignment_changes(before, after, 3).changed] == ["audit"]


def test_the_recording_manager_keeps_the_current_table() -> None:
    manager = RecordingReplicaManager()
    images = [fold(BROKERS)]
    images.append(fold(ORDERS, images[-1]))
    images.append(fold([change("orders", 1, leader=1)], images[-1]))
    images.append(fold([RemoveTopicRecord(topic_id=topic_id("orders"))], images[-1]))
    for old, new in itertools.pairwise(images):
        changes = assignment_changes(old, new, 1)
        manager.apply(changes.changed, changes.removed)
        assert manager.table == assignments_of(new, 1)
    assert len(manager.history) == 3 and manager.table == {}


@settings(max_examples=75)
@given(history=histories(max_steps=20), broker_id=st.integers(0, 4), cuts=st.data())
def test_changes_applied_in_any_steps_give_the_table_of_the_last_image(
    history: tuple[list[object], object], broker_id: int, cuts: st.DataObject
) -> None:
    records, _ = history
    manager = RecordingReplicaManager()
    image, position = EMPTY_IMAGE, 0
    while position < len(records):
        step = cuts.draw(st.integers(1, len(records) - position))
        batch = records[position:position + step]
        position += step
        new = fold_records(image, batch, Provenance(position, 1))  # type: ignore[arg-type]
        changes = assignment_changes(image, new, broker_id)
        manager.apply(changes.changed, changes.removed)
        image = new
    assert manager.table == assignments_of(image, broker_id)
    assert all(broker_id in a.replicas for a in manager.table.values())
    assert all(
        (a.role is PartitionRole.LEADER) == (a.leader == broker_id) for a in manager.table.values()
    )
