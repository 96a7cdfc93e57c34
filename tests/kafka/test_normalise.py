"""The normalisation forgives what legitimately differs and reports everything else."""

from __future__ import annotations

import json

from .normalise import KNOWN, RULES, UNORDERED_LINES, Side, differences, normalise, pending

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


QUORUM_STATUS = (
    "ClusterId:              {cluster}\n"
    "LeaderId:               {leader}\n"
    "LeaderEpoch:            {epoch}\n"
    "HighWatermark:          {hw}\n"
    "MaxFollowerLag:         0\n"
    "MaxFollowerLagTimeMs:   {lag}\n"
    'CurrentVoters:          [{voters}]\n'
    "CurrentObservers:       [{observers}]\n"
)
VOTERS = ['{"id": 1, "endpoints": ["CONTROLLER://127.0.0.1:%d"]}',
          '{"id": 2, "endpoints": ["CONTROLLER://127.0.0.1:%d"]}',
          '{"id": 3, "endpoints": ["CONTROLLER://127.0.0.1:%d"]}']


def _status(leader: int, order: tuple[int, ...], port: int, observers: str = '{"id": 4}'
            ) -> str:
    voters = ", ".join(VOTERS[i - 1] % (port + i) for i in order)
    return QUORUM_STATUS.format(cluster="urgIp7LmQLmw-jhwkz7Oqw" if port > 40000
                                else "n90rOBplScqxNGNeUk09sw", leader=leader,
                                epoch=port % 7, hw=port % 1000, lag=port % 13,
                                voters=voters, observers=observers)


def test_quorum_leader_ids_ports_and_orders_are_no_difference() -> None:
    assert differences(_status(1, (1, 2, 3), 41000), _status(3, (3, 1, 2), 38000)) == []


def test_a_quorum_leader_outside_the_voters_and_a_missing_voter_are_reported() -> None:
    kafka = _status(1, (1, 2, 3), 41000)
    assert any("NOT-A-VOTER(7)" in line
               for line in differences(kafka, _status(7, (1, 2, 3), 38000)))
    assert differences(kafka, _status(1, (1, 2), 38000)) != []
    assert differences(kafka, _status(1, (1, 2, 3), 38000, observers="")) != []


def test_observer_directory_ids_are_a_known_difference_not_a_rule() -> None:
    kafka = _status(1, (1, 2, 3), 41000,
                    observers='{"id": 4, "directoryId": "9fPj6D0t7-6XtfNRytirRQ"}')
    pykraft = _status(2, (2, 1, 3), 38000)
    assert differences(kafka, pykraft) != []
    assert [k.name for k in pending(kafka, pykraft)] == ["observer directory ids"]


REPLICATION = (
    "NodeId\tDirectoryId           \tLogEndOffset\tLag\tLastFetchTimestamp\t"
    "LastCaughtUpTimestamp\tStatus  \t\n"
    "{a}     \tAAAAAAAAAAAAAAAAAAAAAA\t{end}          \t0  \t1795915710477     \t"
    "1795915710477        \tLeader  \t\n"
    "{b}     \tAAAAAAAAAAAAAAAAAAAAAA\t{end}          \t{lag}  \t1795915710054     \t"
    "1795915710054        \tFollower\t\n"
    "{c}     \tAAAAAAAAAAAAAAAAAAAAAA\t{end}          \t0  \t1795915710054     \t"
    "1795915710054        \tFollower\t\n"
    "{o}     \tAAAAAAAAAAAAAAAAAAAAAA\t{end}          \t0  \t1795915710037     \t"
    "1795915710037        \tObserver\t\n"
)


def test_quorum_replication_rows_compare_by_status_not_by_offsets() -> None:
    kafka = REPLICATION.format(a=1, b=2, c=3, o=4, end=326, lag=0)
    assert differences(kafka, REPLICATION.format(a=3, b=1, c=2, o=4, end=89, lag=5)) == []
    # another observer, or a follower shown as an observer, is reported
    assert differences(kafka, REPLICATION.format(a=3, b=1, c=2, o=5, end=89, lag=0)) != []
    demoted = REPLICATION.format(a=3, b=1, c=2, o=4, end=89, lag=0).replace(
        "Follower\t\n", "Observer\t\n", 1)
    assert differences(kafka, demoted) != []


def test_cluster_ids_ports_and_directories_are_no_difference() -> None:
    assert differences("Cluster ID: urgIp7LmQLmw-jhwkz7Oqw\n",
                       "Cluster ID: n90rOBplScqxNGNeUk09sw\n") == []
    kafka = ('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[4,5,6],'
             '"log_dirs":["/tmp/a/broker-4/data","/tmp/a/broker-5/data","/tmp/a/broker-6/data"]}]}\n')
    pykraft = ('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[6,4,5],'
               '"log_dirs":["/tmp/b/broker-6/logs","/tmp/b/broker-4/logs","/tmp/b/broker-5/logs"]}]}\n')
    assert differences(kafka, pykraft) == []
    # one replica fewer is reported
    assert differences(kafka, pykraft.replace("[6,4,5]", "[6,4]")) != []


def test_log_dirs_order_and_sizes_forgive_batching_but_not_an_empty_partition() -> None:
    def dirs(first: int, sizes: tuple[int, int]) -> str:
        brokers = [{"broker": b, "logDirs": [{"partitions": [
            {"partition": f"t-{p}", "size": sizes[p], "offsetLag": 0, "isFuture": False}
            for p in (1, 0)], "error": None, "logDir": f"/x/{b}"}]} for b in (first, 4 + 5 - first)]
        return json.dumps({"brokers": brokers, "version": 1}, separators=(",", ":")) + "\n"

    assert differences(dirs(4, (10, 20)), dirs(5, (11, 25))) == []
    assert differences(dirs(4, (10, 20)), dirs(5, (0, 25))) != []


def test_configs_drop_only_each_sides_default_min_insync_replicas() -> None:
    kafka = ("Default configs for brokers in the cluster are:\n"
             "  min.insync.replicas=1 sensitive=false "
             "synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:min.insync.replicas=1}\n")
    pykraft = "Default configs for brokers in the cluster are:\n"
    assert differences(kafka, pykraft) == []
    topic = ("Dynamic configs for topic t are:\n"
             "  min.insync.replicas=2 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
             "min.insync.replicas=2, DEFAULT_CONFIG:min.insync.replicas=1}\n")
    assert differences("Dynamic configs for topic t are:\n", topic) == []
    # min ISR 3 is no default of pykraft's for these topics: reported
    assert differences("Dynamic configs for topic t are:\n",
                       topic.replace("=2", "=3")) != []


def test_unordered_lines_only_where_a_case_asks() -> None:
    kafka, pykraft = "p0 a\np1 b\n", "p1 b\np0 a\n"
    assert differences(kafka, pykraft) != []
    assert differences(kafka, pykraft, [UNORDERED_LINES.rewrite]) == []
    assert differences(kafka, "p1 b\n", [UNORDERED_LINES.rewrite]) != []


def test_a_failed_reassignment_verify_is_known_only_for_the_throttle_step() -> None:
    kafka = ("exit 0\nStatus of partition reassignment:\nReassignment of partition t-0 is "
             "completed.\n\nClearing broker-level throttles on brokers 4,5,6\n"
             "Clearing topic-level throttles on topic t\n")
    pykraft = kafka.replace("exit 0", "exit 1").replace(
        "Clearing topic-level throttles on topic t\n",
        "Error: org.apache.kafka.common.errors.InvalidRequestException: Cannot update "
        "follower.replication.throttled.rate dynamically\n")
    assert [k.name for k in pending(kafka, pykraft)] == ["replication throttles"]
    unfinished = pykraft.replace("is completed", "is still in progress")
    assert pending(kafka, unfinished) == []
