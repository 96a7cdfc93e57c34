"""The normalisation forgives what legitimately differs and reports everything else."""

from __future__ import annotations

from .normalise import KNOWN, RULES, Side, differences, normalise, pending

KAFKA = (
    "Topic: t\tTopicId: AAAAAAAAAAAAAAAAAAAAAA\tPartitionCount: 2\tReplicationFactor: 3\t"
    "Configs: retention.ms=3600000\n"
    "\tTopic: t\tPartition: 0\tLeader: 4\tReplicas: 4,5,6\tIsr: 4,5,6\tElr: \tLastKnownElr: \n"
    "\tTopic: t\tPartition: 1\tLeader: 5\tReplicas: 5,6,4\tIsr: 5,6,4\tElr: \tLastKnownElr: \n"
)
# the same topic as another cluster places it: another id, other leaders and orders
PYKRAFT_SAME = (
    "Topic: t\tTopicId: zzzzzzzzzzzzzzzzzzzz_-\tPartitionCount: 2\tReplicationFactor: 3\t"
    "Configs: retention.ms=3600000\n"
    "\tTopic: t\tPartition: 0\tLeader: 6\tReplicas: 6,4,5\tIsr: 6,4,5\tElr: \tLastKnownElr: \n"
    "\tTopic: t\tPartition: 1\tLeader: 4\tReplicas: 4,5,6\tIsr: 4,5,6\tElr: \tLastKnownElr: \n"
)


def test_every_rule_says_why_it_is_legitimate() -> None:
    assert RULES
    for rule in RULES:
        assert rule.name and len(rule.reason) > 20


def test_ids_and_placement_chosen_by_each_cluster_are_no_difference() -> None:
    assert differences(KAFKA, PYKRAFT_SAME) == []
    assert "Leader: B\tReplicas: B,B,B\tIsr: B,B,B" in normalise(KAFKA, Side.KAFKA)


def test_a_wrong_partition_count_is_reported() -> None:
    wrong = PYKRAFT_SAME.replace("PartitionCount: 2", "PartitionCount: 3")
    assert any("PartitionCount: 3" in line for line in differences(KAFKA, wrong))


def test_a_missing_partition_line_is_reported() -> None:
    missing = "".join(PYKRAFT_SAME.splitlines(keepends=True)[:2])
    assert any(line.startswith("-\tTopic: t\tPartition: 1")
               for line in differences(KAFKA, missing))


def test_a_leader_outside_the_replicas_is_reported() -> None:
    stray = PYKRAFT_SAME.replace("Leader: 6\t", "Leader: 7\t")
    assert any("NOT-A-REPLICA(7)" in line for line in differences(KAFKA, stray))


def test_a_shrunk_isr_and_a_missing_field_are_reported() -> None:
    shrunk = PYKRAFT_SAME.replace("Isr: 6,4,5", "Isr: 6")
    assert differences(KAFKA, shrunk) != []
    no_elr = PYKRAFT_SAME.replace("\tElr: \tLastKnownElr: ", "")
    assert differences(KAFKA, no_elr) != []


def test_a_different_error_is_reported() -> None:
    kafka = "Error while executing topic command : Topic 'x' does not exist as expected\n"
    other = "Error while executing topic command : The server experienced an unexpected error\n"
    assert differences(kafka, other) != []


def test_each_sides_default_min_insync_replicas_is_no_difference() -> None:
    kafka = KAFKA.replace("Configs: retention.ms", "Configs: min.insync.replicas=1,retention.ms")
    pykraft = PYKRAFT_SAME.replace("Configs: retention.ms",
                                   "Configs: min.insync.replicas=2,retention.ms")
    assert differences(kafka, pykraft) == []


def test_a_min_insync_replicas_other_than_the_default_is_reported() -> None:
    kafka = KAFKA.replace("Configs: retention.ms", "Configs: min.insync.replicas=1,retention.ms")
    # 3 is no majority of 3: pykraft did not take its default
    pykraft = PYKRAFT_SAME.replace("Configs: retention.ms",
                                   "Configs: min.insync.replicas=3,retention.ms")
    assert any("min.insync.replicas=3" in line for line in differences(kafka, pykraft))
    # the same value set on purpose on both sides stays, and agrees
    both = "Configs: min.insync.replicas=3,retention.ms"
    assert differences(KAFKA.replace("Configs: retention.ms", both),
                       PYKRAFT_SAME.replace("Configs: retention.ms", both)) == []


def test_a_known_difference_is_named_only_when_it_explains_everything() -> None:
    no_elr = PYKRAFT_SAME.replace("Elr: \tLastKnownElr: ", "Elr: N/A\tLastKnownElr: N/A")
    assert differences(KAFKA, no_elr) != []
    assert [k.name for k in pending(KAFKA, no_elr)] == ["ELR fields"]
    also_wrong = no_elr.replace("PartitionCount: 2", "PartitionCount: 3")
    assert pending(KAFKA, also_wrong) == []
    assert pending(KAFKA, PYKRAFT_SAME) == []
    assert all(k.lacking for k in KNOWN)
