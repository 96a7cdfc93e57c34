"""Differences between Kafka's and pykraft's answers that are real and known.

Not normalisation (``tests.kafka.normalise_fields`` holds what legitimately differs): each
entry is a way pykraft answers otherwise than Kafka 4.4.0, with what pykraft lacks or why it
answers so, and the corpus cases and response paths where it shows. A difference of a case
is forgiven only by an entry whose ``cases`` and ``paths`` patterns (regular expressions,
matched whole) both match it; an entry that no case meets any more fails
``test_every_known_difference_still_occurs``, so a fixed difference leaves this table.
docs/compat.md lists them (``python -m tests.kafka.differential.report``).
"""

from __future__ import annotations

import re
from typing import Final

import attrs

from .compare import Difference

__all__ = ["FIXED", "KNOWN", "Fixed", "Known", "explain"]


@attrs.frozen
class Known:
    name: str
    why: str
    cases: str  # regular expression over case ids (name@vN)
    paths: str  # regular expression over difference paths
    where: str = ""  # the pykraft code a fix would change

    def matches(self, case_id: str, difference: Difference) -> bool:
        return bool(re.fullmatch(self.cases, case_id) and re.fullmatch(self.paths,
                                                                         difference.path))


KNOWN: Final = (
    Known(
        "ApiVersions tables and features",
        "the tables differ by design (pykraft serves a subset of Kafka's APIs and versions: "
        "the tables side by side are above) and pykraft has no feature levels "
        "(metadata.version, kraft.version, ...: no supported or finalized features); an "
        "ApiVersions request of an unknown version gets Kafka's v0 answer listing "
        "ApiVersions alone, pykraft's listing its whole table (KIP-511 allows both)",
        r"api-versions(-controller)?(-unknown-version)?@v\d+",
        r"\[0\]\.message\.(api_keys|supported_features|finalized_features"
        r"|finalized_features_epoch)(\.len|\[\d+\]\..*)?",
        "quorum/node/local_answers.py",
    ),
    Known(
        "fetching from followers (KIP-392)",
        "Kafka serves a consumer's Fetch v11+ at a follower (up to the high watermark); "
        "pykraft serves consumers at the leader only and answers NOT_LEADER_OR_FOLLOWER",
        r"fetch-follower@v1[1-9]",
        r"\[0\]\.message\.responses\[0\]\.partitions\[0\]\.(error_code|high_watermark"
        r"|last_stable_offset|log_start_offset|records)",
        "broker/replica (fetch at a follower)",
    ),
    Known(
        "broker configs",
        "DescribeConfigs of a broker: pykraft does not list num.partitions (a read-only "
        "broker config there) and answers log.retention.ms with its effective value where "
        "Kafka answers null (unset: log.retention.hours applies)",
        r"describe-configs-broker@v\d+",
        r"\[0\]\.message\.results\[0\]\.configs(\.len|\[\d+\]\..*)",
        "broker/api/configs.py",
    ),
    Known(
        "quorum directory ids",
        "DescribeQuorum v2 carries each replica's directory id (KIP-853); pykraft's "
        "quorum is static (kraft.version 0) and has none (zero)",
        r"describe-quorum@v2",
        r"\[0\]\.message\.topics\[0\]\.partitions\[0\]\.(current_voters|observers)\[\d+\]"
        r"\.replica_directory_id",
        "quorum (KIP-853 dynamic quorums)",
    ),
    Known(
        "DescribeQuorum of another partition",
        "DescribeQuorum for a partition other than __cluster_metadata-0: Kafka echoes the "
        "asked topic name with leader 0, epoch 0, high watermark 0 and no nodes; pykraft "
        "names __cluster_metadata with -1 and lists its nodes (the error code, "
        "UNKNOWN_TOPIC_OR_PARTITION, agrees)",
        r"describe-quorum(-controller)?-unknown-topic@v\d+",
        r"\[0\]\.message\.(topics\[0\]\.topic_name|topics\[0\]\.partitions\[0\]\."
        r"(leader_id|leader_epoch|high_watermark)|nodes(\.len|\[\d+\]\..*))",
        "quorum/describe.py",
    ),
    Known(
        "IncrementalAlterConfigs of an unknown operation",
        "an operation code outside 0-3: Kafka answers UNKNOWN_SERVER_ERROR (-1), pykraft "
        "INVALID_REQUEST (42), which names the client's mistake",
        r"incremental-alter-configs-bad-op@v\d+",
        r"\[0\]\.message\.responses\[0\]\.error_code",
        "quorum/controller (deliberate)",
    ),
    Known(
        "transactions",
        "pykraft has no transaction coordinator: FindCoordinator for a transactional id and "
        "InitProducerId with one answer TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53)",
        r"(find-coordinator-transaction|init-producer-id-transactional"
        r"|init-producer-id-bad-timeout)@v\d+",
        r"\[0\]\.message\.(error_code|node_id|host|port|coordinators\[0\]\."
        r"(error_code|node_id|host|port))",
        "broker (transactions are not implemented)",
    ),
    Known(
        "Raft answers' node endpoints",
        "BeginQuorumEpoch and EndQuorumEpoch v1 answers carry the leader's endpoints "
        "(KIP-853) in Kafka; pykraft's carry none",
        r"(begin|end)-quorum-epoch-[a-z-]+@v1",
        r"\[0\]\.message\.node_endpoints(\.len|\[\d+\]\..*)",
        "quorum/raft",
    ),
)


@attrs.frozen
class Fixed:
    """A difference the corpus found that was fixed, and the test that keeps it fixed."""

    name: str
    what: str
    test: str


FIXED: Final = (
    Fixed(
        "ListOffsets v1-3 closed the connection",
        "the answer to LATEST carried the leader epoch, a field v1-3 lack: the broker could "
        "not encode it and closed the connection; now the epoch is left out before v4",
        "tests/unit/broker/api/test_offsets.py::"
        "test_an_answer_before_v4_has_no_leader_epoch_so_it_can_be_encoded",
    ),
    Fixed(
        "Produce v0-2 appended their records",
        "Kafka 4 advertises Produce from v0 (for older librdkafka) but parses v3+ only and "
        "closes the connection on v0-2; pykraft appended the batch. Now it closes too and "
        "writes nothing",
        "tests/unit/broker/test_router_produce_versions.py",
    ),
    Fixed(
        "Metadata for an illegal topic name",
        "Kafka answers INVALID_TOPIC_EXCEPTION (17) for a name no topic may have (bad "
        "characters, too long, '.' or '..'), pykraft answered UNKNOWN_TOPIC_OR_PARTITION",
        "tests/unit/broker/api/test_metadata_topic_names.py",
    ),
    Fixed(
        "OffsetCommit to an unknown topic",
        "pykraft's coordinator stored offsets of a topic the cluster does not hold; Kafka's "
        "KafkaApis answers UNKNOWN_TOPIC_OR_PARTITION for those partitions before its "
        "coordinator sees the request, and now pykraft's broker does too",
        "tests/unit/broker/api/test_commit_known_topics.py",
    ),
    Fixed(
        "Topic configs of Kafka 4.4",
        "CreateTopics v5 listed 33 topic configs where Kafka 4.4 lists 37: "
        "errors.deadletterqueue.group.enable, max.decompressed.message.bytes, "
        "remote.copy.lag.bytes and remote.copy.lag.ms were unknown, and "
        "message.timestamp.after.max.ms defaulted to Long.MAX_VALUE where 4.4's default is one "
        "hour (read from the 4.4.0 jar); values pykraft cannot honour are refused",
        "tests/unit/controller/test_topic_config_defs.py::"
        "test_the_table_is_kafkas_4x_topic_config_list",
    ),
    Fixed(
        "Leader epoch of the earliest offset",
        "ListOffsets EARLIEST (v4+) answered leader epoch -1; Kafka answers the epoch of its "
        "leader epoch cache's earliest entry, which covers the log start "
        "(UnifiedLog.fetchOffsetByTimestamp), and so does pykraft now",
        "tests/unit/broker/api/test_offsets_earliest_epoch.py",
    ),
    Fixed(
        "A batch cut short",
        "a Produce whose bytes hold no whole batch was answered CORRUPT_MESSAGE (2); Kafka's "
        "ProduceRequest.validateRecords finds no batch and answers INVALID_RECORD (87). "
        "pykraft now frames the bytes as Kafka's batch iterator does (a length below 14 or a "
        "magic outside 0-2: CORRUPT_MESSAGE; magic 0-1, no whole batch or two: "
        "INVALID_RECORD; stray bytes after the batch dropped)",
        "tests/unit/broker/replica/test_append_framing.py",
    ),
    Fixed(
        "ApiVersions client software name",
        "an ApiVersions v3+ whose client_software_name or client_software_version is empty or "
        "not [a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*[a-zA-Z0-9])? was answered with the table; Kafka "
        "(ApiVersionsRequest.isValid) answers INVALID_REQUEST (42) with no table, and so does "
        "pykraft now",
        "tests/unit/node/test_api_versions_software_name.py",
    ),
    Fixed(
        "Fetch error partitions",
        "a consumer's Fetch partition answered with an error carried the partition's offsets "
        "(out of range) and a null aborted-transactions list (unknown partition); Kafka sends "
        "-1 for the high watermark, last stable and log start offsets, and an empty list for a "
        "partition its metadata lacks (FetchResponse.partitionResponse). pykraft's own "
        "followers still get the leader's offsets with OFFSET_OUT_OF_RANGE: they start over at "
        "its log start (Kafka's follower asks ListOffsets)",
        "tests/unit/broker/replica/test_fetch_error_partitions.py",
    ),
    Fixed(
        "Versions Kafka 4 removed",
        "pykraft advertised and served versions Kafka 4.0 removed (KIP-896): CreateTopics "
        "v0-1, DescribeConfigs v0, DescribeLogDirs v0 on the broker listener, DeleteTopics "
        "v0 and AlterPartition v0-1 on the controller listener (and CreateTopics v0-1, "
        "DescribeConfigs v0 there); now neither listener advertises them and the connection "
        "closes on them, as Kafka's does",
        "tests/unit/node/test_removed_versions.py",
    ),
    Fixed(
        "LeaveGroup of an unknown group",
        "LeaveGroup v3+ of a group the coordinator lacks was answered UNKNOWN_MEMBER_ID for "
        "the whole request; Kafka's GroupCoordinatorService.leaveGroup answers each member "
        "UNKNOWN_MEMBER_ID and the request no error, and so does pykraft now",
        "tests/unit/broker/group/test_membership.py::test_leave_of_an_unknown_group_is_unknown_member",
    ),
    Fixed(
        "JoinGroup protocol name of a refusal",
        "a JoinGroup v7+ answer without a generation (MEMBER_ID_REQUIRED, ...) named an empty "
        "protocol; Kafka's JoinGroupResponse writes an empty name as null from v7, and so does "
        "pykraft now",
        "tests/unit/broker/group/test_join_protocol_name.py",
    ),
    Fixed(
        "Raft requests of another cluster",
        "a Fetch on the controller listener with a foreign cluster id and another topic "
        "partition was answered INVALID_REQUEST (42); Kafka's KafkaRaftClient checks the "
        "cluster id first and answers INCONSISTENT_CLUSTER_ID (104), and pykraft now does so "
        "in Fetch, Vote, BeginQuorumEpoch and EndQuorumEpoch",
        "tests/unit/raft/test_cluster_id_first.py",
    ),
)


def explain(case_id: str, difference: Difference) -> Known | None:
    """The known difference that covers this one, if any."""
    return next((k for k in KNOWN if k.matches(case_id, difference)), None)
