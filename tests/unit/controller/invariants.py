"""The partition invariants every image must keep (controller brief):

- the leader is -1 or in the ISR;
- the ISR is a non-empty subset of the replicas, without repeats;
- adding and removing replicas are replicas, and never both;
- a RECOVERING partition (after an unclean election) has a one-member ISR;
- a topic is whole: partitions 0..n-1, n >= 1, and name and id maps agree;
- leader epochs and partition epochs never decrease (against ``previous``).
"""

from __future__ import annotations

from quorum.controller.image import NO_LEADER, LeaderRecoveryState, MetadataImage

__all__ = ["assert_partition_invariants"]


def assert_partition_invariants(
    image: MetadataImage, previous: MetadataImage | None = None
) -> None:
    assert len(image.topic_ids_by_name) == len(image.topics_by_id)
    for name, topic_id in image.topic_ids_by_name.items():
        topic = image.topics_by_id[topic_id]
        assert topic.name == name
        assert sorted(topic.partitions) == list(range(len(topic.partitions))), (
            f"{name} is not whole: partitions {sorted(topic.partitions)}"
        )
        assert topic.partitions, f"{name} has no partitions"
    for topic, index, p in image.iter_partitions():
        where = f"{topic.name}-{index} {p}"
        assert p.isr, f"empty ISR: {where}"
        assert len(set(p.isr)) == len(p.isr), f"ISR repeats a broker: {where}"
        assert len(set(p.replicas)) == len(p.replicas), f"replicas repeat a broker: {where}"
        assert set(p.isr) <= set(p.replicas), f"ISR outside the replicas: {where}"
        assert p.leader == NO_LEADER or p.leader in p.isr, f"leader outside the ISR: {where}"
        assert set(p.adding_replicas) <= set(p.replicas), f"adding outside replicas: {where}"
        assert set(p.removing_replicas) <= set(p.replicas), f"removing outside replicas: {where}"
        assert not set(p.adding_replicas) & set(p.removing_replicas), f"adding and removing: {where}"
        if p.leader_recovery_state == LeaderRecoveryState.RECOVERING:
            assert len(p.isr) == 1, f"RECOVERING with a larger ISR: {where}"
        if previous is not None:
            before = previous.partition(topic.topic_id, index)
            if before is not None:
                assert p.leader_epoch >= before.leader_epoch, f"leader epoch went back: {where}"
                assert p.partition_epoch >= before.partition_epoch, (
                    f"partition epoch went back: {where}"
                )
