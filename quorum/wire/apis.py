"""The registry of Kafka APIs pykraft decodes, and each listener's version table.

Message modules register their request/response pairs here; the protocol
layer looks classes up by api key when it decodes a request.  The two listener
tables say which versions each listener advertises in ApiVersions: the broker's
client listener follows what real Kafka clients negotiate, the controller
listener serves KRaft peers and brokers at the KRaft versions.
"""

from __future__ import annotations

from typing import Final

import attrs

__all__ = [
    "API_BY_KEY",
    "CLIENT_LISTENER_VERSIONS",
    "CONTROLLER_LISTENER_VERSIONS",
    "ApiSpec",
    "api_for",
    "register_api",
]


@attrs.frozen(kw_only=True)
class ApiSpec:
    """One API: its key, Kafka's name, message classes and the versions we decode."""

    key: int
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


# The ApiVersions table of the broker's client listener: api key -> (min, max).
#
# The maximums are the newest versions that kafka-python and librdkafka send
# without a change in meaning (Produce 10+ leader hints, Fetch 13+ topic ids);
# the minimums stay low because older clients (aiokafka, old librdkafka) need
# them.  Produce v0-2 are advertised but answered with
# UNSUPPORTED_FOR_MESSAGE_FORMAT, as Kafka does.  Topic-id versions stay off
# until topic ids work end to end on the broker.
CLIENT_LISTENER_VERSIONS: Final[dict[int, tuple[int, int]]] = {
    0: (0, 9),  # Produce
    1: (4, 12),  # Fetch
    2: (1, 7),  # ListOffsets
    3: (0, 12),  # Metadata
    18: (0, 4),  # ApiVersions
    19: (0, 5),  # CreateTopics (forwarded to the active controller)
    20: (1, 4),  # DeleteTopics (forwarded to the active controller)
    22: (0, 4),  # InitProducerId
    32: (0, 4),  # DescribeConfigs (forwarded to the active controller)
    37: (0, 3),  # CreatePartitions (forwarded)
    43: (0, 2),  # ElectLeaders (forwarded)
    44: (0, 1),  # IncrementalAlterConfigs (forwarded)
    45: (0, 0),  # AlterPartitionReassignments (forwarded)
    46: (0, 0),  # ListPartitionReassignments (forwarded)
    55: (0, 2),  # DescribeQuorum (forwarded to the active controller)
    60: (0, 1),  # DescribeCluster
}

# The ApiVersions table of a controller's listener: api key -> (min, max).
#
# Controllers speak KRaft to each other and to brokers (observers): Fetch up
# to v17 carries topic ids (v13+), ReplicaState (v15+) and ReplicaDirectoryId
# (v17), Vote v2 carries pre-votes.  They also serve broker registration and
# heartbeats, AlterPartition, and every request that changes metadata
# (CreateTopics, DeleteTopics), which brokers forward.  No Produce: the
# metadata log is written only by the active controller.
CONTROLLER_LISTENER_VERSIONS: Final[dict[int, tuple[int, int]]] = {
    1: (4, 17),  # Fetch
    18: (0, 4),  # ApiVersions
    19: (0, 5),  # CreateTopics
    20: (0, 4),  # DeleteTopics
    32: (0, 4),  # DescribeConfigs
    37: (0, 3),  # CreatePartitions
    43: (0, 2),  # ElectLeaders
    44: (0, 1),  # IncrementalAlterConfigs
    45: (0, 0),  # AlterPartitionReassignments
    46: (0, 0),  # ListPartitionReassignments
    52: (0, 2),  # Vote
    53: (0, 1),  # BeginQuorumEpoch
    54: (0, 1),  # EndQuorumEpoch
    55: (0, 2),  # DescribeQuorum
    56: (0, 3),  # AlterPartition
    59: (0, 1),  # FetchSnapshot
    60: (0, 1),  # DescribeCluster
    62: (0, 4),  # BrokerRegistration
    63: (0, 1),  # BrokerHeartbeat
    64: (0, 0),  # UnregisterBroker
    67: (0, 0),  # AllocateProducerIds
    10000: (0, 0),  # PykraftAppend: pykraft's own, commits records (messages/pykraft_append.py)
    10001: (0, 0),  # PykraftDescribeImage: pykraft's own, a node's image digest
}
