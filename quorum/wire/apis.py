"""The registry of Kafka APIs pykraft decodes, and each listener's version table.

Message modules register their request/response pairs here; the protocol
layer looks classes up by api key when it decodes a request.  The two listener
tables say which versions each listener advertises in ApiVersions: the broker's
client listener follows what real Kafka clients negotiate, the controller
listener serves KRaft peers and brokers at the KRaft versions.

Every table here is keyed by ``ApiKey`` members but typed by int: it is read
with a request header's api key, a plain int that may be a key we do not know
(an ``IntEnum`` member hashes and compares as its value).
"""

from __future__ import annotations

from typing import Final

import attrs

from quorum.wire.api_keys import ApiKey

__all__ = [
    "API_BY_KEY",
    "CLIENT_LISTENER_VERSIONS",
    "CONTROLLER_LISTENER_VERSIONS",
    "PEER_ONLY_APIS",
    "ApiSpec",
    "api_for",
    "register_api",
]


@attrs.frozen(kw_only=True)
class ApiSpec:
    """One API: its key, Kafka's name, message classes and the versions we decode."""

    key: ApiKey
    name: str
    request: type
    response: type
    low: int
    high: int


API_BY_KEY: Final[dict[int, ApiSpec]] = {}


def register_api(spec: ApiSpec) -> ApiSpec:
    if spec.key in API_BY_KEY:
        raise ValueError(f"api key {spec.key} is registered twice")
    API_BY_KEY[spec.key] = spec
    return spec


def api_for(key: int) -> ApiSpec | None:
    return API_BY_KEY.get(key)


# The requests that only pykraft's own nodes and tools send: the KRaft RPCs
# between controllers, a broker's calls to the controller, pykraft's private
# APIs.  Their bodies must fill the frame exactly (``decode_request``): bytes
# after a complete body could only come from a bug in our own encoder, and
# refusing them finds it.  Every other request may come from a Kafka client and
# is read as Kafka reads it (``RequestContext.parseRequest`` never asks whether
# the body used the whole frame): what follows a complete body is ignored.
# librdkafka, for one, leaves a 4-byte array-count placeholder in its
# all-topics Metadata request (v9+) and so sends 3 bytes more than the body.
PEER_ONLY_APIS: Final[frozenset[int]] = frozenset({
    ApiKey.VOTE,
    ApiKey.BEGIN_QUORUM_EPOCH,
    ApiKey.END_QUORUM_EPOCH,
    ApiKey.FETCH_SNAPSHOT,
    ApiKey.ALTER_PARTITION,
    ApiKey.BROKER_REGISTRATION,
    ApiKey.BROKER_HEARTBEAT,
    ApiKey.ALLOCATE_PRODUCER_IDS,
    ApiKey.PYKRAFT_APPEND,
    ApiKey.PYKRAFT_DESCRIBE_IMAGE,
})


# The ApiVersions table of the broker's client listener: api key -> (min, max).
#
# The maximums are the newest versions that kafka-python and librdkafka send
# without a change in meaning (Produce 10+ leader hints, Fetch 13+ topic ids);
# the minimums stay low because older clients (aiokafka, old librdkafka) need
# them.  Produce v0-2 are advertised but answered with
# UNSUPPORTED_FOR_MESSAGE_FORMAT, as Kafka does.  Topic-id versions stay off
# until topic ids work end to end on the broker.  The versions Kafka 4.0
# removed (KIP-896: CreateTopics v0-1, DeleteTopics v0, DescribeConfigs v0,
# DescribeLogDirs v0, ...) are neither advertised nor served: the connection
# closes on them, as Kafka's does.
CLIENT_LISTENER_VERSIONS: Final[dict[int, tuple[int, int]]] = {
    ApiKey.PRODUCE: (0, 9),
    ApiKey.FETCH: (4, 12),
    ApiKey.LIST_OFFSETS: (1, 7),
    ApiKey.METADATA: (0, 12),
    ApiKey.API_VERSIONS: (0, 4),
    ApiKey.CREATE_TOPICS: (2, 5),  # forwarded to the active controller
    ApiKey.DELETE_TOPICS: (1, 4),  # forwarded to the active controller
    ApiKey.INIT_PRODUCER_ID: (0, 4),
    # KIP-320: a consumer checks its position after a leader change (librdkafka sends v2 only)
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (2, 4),
    ApiKey.DELETE_RECORDS: (0, 2),
    ApiKey.DESCRIBE_LOG_DIRS: (1, 4),
    ApiKey.DESCRIBE_CONFIGS: (1, 4),  # answered by the broker
    ApiKey.CREATE_PARTITIONS: (0, 3),  # forwarded
    ApiKey.ELECT_LEADERS: (0, 2),  # forwarded
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),  # forwarded
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 0),  # forwarded
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (0, 0),  # forwarded
    ApiKey.DESCRIBE_QUORUM: (0, 2),  # forwarded to the active controller
    ApiKey.DESCRIBE_CLUSTER: (0, 1),
    # the classic group protocol at Kafka 4.x's versions (KIP-896 removed OffsetCommit
    # v0-1 and OffsetFetch v0; OffsetCommit v10 / OffsetFetch v10 carry topic ids)
    ApiKey.FIND_COORDINATOR: (0, 6),
    ApiKey.JOIN_GROUP: (0, 9),
    ApiKey.SYNC_GROUP: (0, 5),
    ApiKey.HEARTBEAT: (0, 4),
    ApiKey.LEAVE_GROUP: (0, 5),
    ApiKey.OFFSET_COMMIT: (2, 9),
    ApiKey.OFFSET_FETCH: (1, 9),
    ApiKey.LIST_GROUPS: (0, 5),
    ApiKey.DESCRIBE_GROUPS: (0, 6),
    ApiKey.DELETE_GROUPS: (0, 2),
    ApiKey.OFFSET_DELETE: (0, 0),
}

# The ApiVersions table of a controller's listener: api key -> (min, max).
#
# Controllers speak KRaft to each other and to brokers (observers): Fetch up
# to v17 carries topic ids (v13+), ReplicaState (v15+) and ReplicaDirectoryId
# (v17), Vote v2 carries pre-votes.  They also serve broker registration and
# heartbeats, AlterPartition, and every request that changes metadata
# (CreateTopics, DeleteTopics), which brokers forward.  No Produce: the
# metadata log is written only by the active controller.  No version Kafka
# 4.0 removed (KIP-896): CreateTopics v0-1, DeleteTopics v0, DescribeConfigs
# v0, AlterPartition v0-1.
CONTROLLER_LISTENER_VERSIONS: Final[dict[int, tuple[int, int]]] = {
    ApiKey.FETCH: (4, 17),
    ApiKey.API_VERSIONS: (0, 4),
    ApiKey.CREATE_TOPICS: (2, 5),
    ApiKey.DELETE_TOPICS: (1, 4),
    ApiKey.DESCRIBE_CONFIGS: (1, 4),
    ApiKey.CREATE_PARTITIONS: (0, 3),
    ApiKey.ELECT_LEADERS: (0, 2),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.VOTE: (0, 2),
    ApiKey.BEGIN_QUORUM_EPOCH: (0, 1),
    ApiKey.END_QUORUM_EPOCH: (0, 1),
    ApiKey.DESCRIBE_QUORUM: (0, 2),
    ApiKey.ALTER_PARTITION: (2, 3),
    ApiKey.FETCH_SNAPSHOT: (0, 1),
    ApiKey.DESCRIBE_CLUSTER: (0, 1),
    ApiKey.BROKER_REGISTRATION: (0, 4),
    ApiKey.BROKER_HEARTBEAT: (0, 1),
    ApiKey.UNREGISTER_BROKER: (0, 0),
    ApiKey.ALLOCATE_PRODUCER_IDS: (0, 0),
    # pykraft's own: commits records (messages/pykraft_append.py)
    ApiKey.PYKRAFT_APPEND: (0, 0),
    # pykraft's own: a node's image digest (messages/pykraft_describe_image.py)
    ApiKey.PYKRAFT_DESCRIBE_IMAGE: (0, 0),
}
