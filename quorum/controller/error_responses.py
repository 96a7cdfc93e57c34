"""One error for a whole controller request, in the shape of its response.

Used when the request cannot be handled at all: this node is not the active
controller (NOT_CONTROLLER), leadership moved before its records were
committed, or the node is shutting down. Requests with per-item results get
the error on every item, as Kafka's controller answers them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    AllocateProducerIdsRequest,
    AllocateProducerIdsResponse,
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    AlterPartitionRequest,
    AlterPartitionResponse,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsResponseTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
    CreateTopicsResponseTopic,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DeleteTopicsResponseTopic,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    DescribeConfigsResponseResult,
    DescribeQuorumRequest,
    DescribeQuorumResponse,
    ElectLeadersRequest,
    ElectLeadersResponse,
    ElectLeadersResponsePartitionResult,
    ElectLeadersResponseReplicaElectionResult,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
    IncrementalAlterConfigsResponseAlterConfigsResource,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
    UnregisterBrokerRequest,
    UnregisterBrokerResponse,
)

__all__ = ["CONTROLLER_REQUESTS", "error_response"]

# (request, error, its message, the version the response is encoded at)
_Builder = Callable[[Any, Errors, str, int], Any]


def _create_topics(request: CreateTopicsRequest, error: Errors, text: str, version: int) -> Any:
    return CreateTopicsResponse(
        topics=tuple(
            CreateTopicsResponseTopic(name=t.name, error_code=error, error_message=text)
            for t in request.topics
        )
    )


def _delete_topics(request: DeleteTopicsRequest, error: Errors, text: str, version: int) -> Any:
    return DeleteTopicsResponse(
        responses=tuple(
            DeleteTopicsResponseTopic(name=name, error_code=error) for name in request.topic_names
        )
    )


def _create_partitions(
    request: CreatePartitionsRequest, error: Errors, text: str, version: int
) -> Any:
    return CreatePartitionsResponse(
        results=tuple(
            CreatePartitionsResponseTopicResult(name=t.name, error_code=error, error_message=text)
            for t in request.topics
        )
    )


def _alter_configs(
    request: IncrementalAlterConfigsRequest, error: Errors, text: str, version: int
) -> Any:
    return IncrementalAlterConfigsResponse(
        responses=tuple(
            IncrementalAlterConfigsResponseAlterConfigsResource(
                error_code=error,
                error_message=text,
                resource_type=r.resource_type,
                resource_name=r.resource_name,
            )
            for r in request.resources
        )
    )


def _describe_configs(
    request: DescribeConfigsRequest, error: Errors, text: str, version: int
) -> Any:
    return DescribeConfigsResponse(
        results=tuple(
            DescribeConfigsResponseResult(
                error_code=error,
                error_message=text,
                resource_type=r.resource_type,
                resource_name=r.resource_name,
            )
            for r in request.resources
        )
    )


# ElectLeaders' top-level error code is there from v1 (v0 has none)
_ELECT_LEADERS_TOP_ERROR_SINCE: Final = 1


def _elect_leaders(request: ElectLeadersRequest, error: Errors, text: str, version: int) -> Any:
    """Kafka's ``ElectLeadersRequest.getErrorResponse``: the error on every partition asked
    about, and at the top from v1 (v0 has no top-level error code)."""
    return ElectLeadersResponse(
        error_code=error if version >= _ELECT_LEADERS_TOP_ERROR_SINCE else Errors.NONE,
        replica_election_results=tuple(
            ElectLeadersResponseReplicaElectionResult(
                topic=t.topic,
                partition_result=tuple(
                    ElectLeadersResponsePartitionResult(
                        partition_id=p, error_code=error, error_message=text
                    )
                    for p in t.partitions
                ),
            )
            for t in request.topic_partitions or ()
        ),
    )


_BUILDERS: Final[dict[type, _Builder]] = {
    CreateTopicsRequest: _create_topics,
    DeleteTopicsRequest: _delete_topics,
    CreatePartitionsRequest: _create_partitions,
    IncrementalAlterConfigsRequest: _alter_configs,
    DescribeConfigsRequest: _describe_configs,
    AlterPartitionRequest: lambda r, e, t, v: AlterPartitionResponse(error_code=e),
    ElectLeadersRequest: _elect_leaders,
    AlterPartitionReassignmentsRequest: lambda r, e, t, v: AlterPartitionReassignmentsResponse(
        error_code=e, error_message=t
    ),
    ListPartitionReassignmentsRequest: lambda r, e, t, v: ListPartitionReassignmentsResponse(
        error_code=e, error_message=t
    ),
    BrokerRegistrationRequest: lambda r, e, t, v: BrokerRegistrationResponse(error_code=e),
    BrokerHeartbeatRequest: lambda r, e, t, v: BrokerHeartbeatResponse(error_code=e),
    UnregisterBrokerRequest: lambda r, e, t, v: UnregisterBrokerResponse(
        error_code=e, error_message=t
    ),
    AllocateProducerIdsRequest: lambda r, e, t, v: AllocateProducerIdsResponse(error_code=e),
}

# the request classes the active controller handles (and a standby refuses)
CONTROLLER_REQUESTS: Final = frozenset(_BUILDERS)

# answered by the Raft leader (a standby says NOT_LEADER_OR_FOLLOWER itself), but
# forwarded by brokers, which need its error shape when no controller answers
_RAFT_BUILDERS: Final[dict[type, _Builder]] = {
    DescribeQuorumRequest: lambda r, e, t, v: DescribeQuorumResponse(
        error_code=e, error_message=t
    ),
}


def error_response(request: Any, error: Errors, message: str, *, version: int) -> Any:
    """``request``'s response at ``version`` carrying ``error`` everywhere it has an error
    code (only where ``version`` has the field: the codec refuses a value elsewhere)."""
    builder = _BUILDERS.get(type(request)) or _RAFT_BUILDERS.get(type(request))
    if builder is None:
        raise TypeError(f"{type(request).__name__} is not a controller request")
    return builder(request, error, message, version)
