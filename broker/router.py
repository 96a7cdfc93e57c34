"""Decoded requests of the broker listener: answered from the metadata image or forwarded.

The listener serves ApiVersions, Metadata, DescribeCluster, DescribeConfigs
(``broker.api.configs``) and pykraft's PykraftDescribeImage (the image's
offset and digest, so tests and tools can compare nodes) from this broker's
image; Produce and Fetch through the replica driver (``broker.replica.driver``:
an acks=0 produce takes no place in the response order, a long-poll fetch
waits in the core while the connection's next requests are read), ListOffsets
and OffsetForLeaderEpoch from the partitions it leads (``broker.api.offsets``),
DescribeLogDirs and DeleteRecords from its partition logs (``broker.api.log_dirs``);
and it forwards the admin requests in
``FORWARDED_APIS`` (CreateTopics, DeleteTopics, CreatePartitions, configs,
elections, reassignments, DescribeQuorum) to the active controller (``ControllerForwarder``),
each in its own task so a slow forward holds up nothing else; the answer
takes its place in the connection's response order. It advertises only
these, at the client listener's versions (``CLIENT_LISTENER_VERSIONS``);
anything else closes the connection, as Kafka does for a request it does
not serve. The table, KIP-511
(an ApiVersions request at a version we do not know is answered in v0 with
our table) and the ApiVersions and PykraftDescribeImage answers are the
controller listener's (``quorum.node.local_answers``). Metadata answers are
built and encoded in slices and kept per image (``broker.api.metadata_cache``),
so a poll about an image already answered costs a copy of its bytes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final

import trio

from broker.api.configs import describe_configs_here
from broker.api.forwarding import FORWARDED_APIS, ControllerForwarder
from broker.api.groups import (
    GROUP_APIS,
    GROUP_COORDINATOR_APIS,
    OffsetsTopicCreator,
    commit_known_topics,
    find_coordinator,
)
from broker.api.log_dirs import describe_log_dirs
from broker.api.metadata import (
    ListenerView,
    describe_cluster_response,
    invalid_metadata_request,
)
from broker.api.metadata_cache import MetadataAnswerCache
from broker.api.offsets import list_offsets, offsets_for_leader_epochs
from broker.api.producer_ids import ProducerIdSource
from broker.auto_topics import AutoTopicCreator
from broker.group.driver import GroupDriver
from broker.replica.driver import ReplicaDriver
from quorum.controller.image import MetadataImage
from quorum.controller.results import ControllerConfig
from quorum.node.connection import ResponseSlot, ServerConnection
from quorum.node.local_answers import ListenerApis, ListenerRouter
from quorum.node.router import RequestRejected
from quorum.wire import ApiKey
from quorum.wire.apis import CLIENT_LISTENER_VERSIONS, CONTROLLER_LISTENER_VERSIONS
from quorum.wire.messages import (
    DescribeClusterRequest,
    DescribeConfigsRequest,
    DescribeLogDirsRequest,
    ListOffsetsRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetForLeaderEpochRequest,
    is_old_message_format,
)
from quorum.wire.protocol import RequestHeader

__all__ = [
    "BROKER_LISTENER_APIS",
    "DATA_PLANE_APIS",
    "BrokerRequestRejected",
    "BrokerRouter",
    "broker_listener_table",
]

# answered here (the rest is forwarded)
_LOCAL_APIS: Final = frozenset({
    ApiKey.API_VERSIONS,
    ApiKey.METADATA,
    ApiKey.DESCRIBE_CLUSTER,
    ApiKey.DESCRIBE_CONFIGS,
    ApiKey.PYKRAFT_DESCRIBE_IMAGE,
})
# answered by the partitions this broker hosts (a broker with a data plane)
DATA_PLANE_APIS: Final = frozenset({
    ApiKey.PRODUCE,
    ApiKey.FETCH,
    ApiKey.LIST_OFFSETS,
    ApiKey.OFFSET_FOR_LEADER_EPOCH,
    ApiKey.DESCRIBE_LOG_DIRS,
    ApiKey.DELETE_RECORDS,
    ApiKey.INIT_PRODUCER_ID,  # idempotent producers: the replicas keep their state
    *GROUP_APIS,  # the group coordinator keeps its groups in partitions this broker leads
})
BROKER_LISTENER_APIS: Final = _LOCAL_APIS | FORWARDED_APIS | DATA_PLANE_APIS


class BrokerRequestRejected(RequestRejected):
    """A request this listener does not serve: the connection is closed."""


def broker_listener_table(*, data_plane: bool = False) -> dict[int, tuple[int, int]]:
    """What the broker listener advertises: the versions it decodes and serves."""
    served = BROKER_LISTENER_APIS if data_plane else BROKER_LISTENER_APIS - DATA_PLANE_APIS
    table = {k: v for k, v in CLIENT_LISTENER_VERSIONS.items() if k in served}
    table[ApiKey.PYKRAFT_DESCRIBE_IMAGE] = (0, 0)
    for key in FORWARDED_APIS:
        # forwarded at the client's version: the controller must serve it too
        low, high = CONTROLLER_LISTENER_VERSIONS[key]
        assert low <= table[key][0] and table[key][1] <= high, (key, table[key], (low, high))
    return table


# one request: answer it through the connection (a handler may complete the slot later)
Handler = Callable[[ServerConnection, RequestHeader, Any], Awaitable[None]]


class BrokerRouter(ListenerRouter):
    def __init__(
        self,
        *,
        view: ListenerView,
        image: Callable[[], MetadataImage],
        forwarder: ControllerForwarder | None = None,
        nursery: trio.Nursery | None = None,
        static_configs: ControllerConfig | None = None,
        replicas: ReplicaDriver | None = None,
        log_dir: Path | None = None,
        auto_create_topics: bool = False,
        producer_ids: ProducerIdSource | None = None,
        groups: GroupDriver | None = None,
        offsets_topic: OffsetsTopicCreator | None = None,
    ) -> None:
        super().__init__(
            ListenerApis(
                broker_listener_table(data_plane=replicas is not None),
                where=f"the broker listener {view.listener_name}",
                rejected=BrokerRequestRejected,
            )
        )
        assert (forwarder is None) == (nursery is None), "a forwarder needs a nursery"
        assert (replicas is None) == (producer_ids is None), "a data plane hands out producer ids"
        assert (replicas is None) == (groups is None), "a data plane coordinates groups"
        self._view = view
        self._image = image
        self._forwarder = forwarder
        self._nursery = nursery
        self._replicas = replicas
        self._producer_ids = producer_ids
        self._groups = groups
        self._offsets_topic = offsets_topic
        self._auto_topics = (
            AutoTopicCreator(forwarder, nursery)
            if auto_create_topics and forwarder is not None and nursery is not None
            else None
        )
        self._log_dir = log_dir
        self._static_configs = static_configs or ControllerConfig(
            node_id=view.node_id, cluster_id=view.cluster_id
        )
        self.metadata_answers = MetadataAnswerCache()
        self._handlers: dict[int, Handler] = {
            ApiKey.API_VERSIONS: self._answered(self._common),
            ApiKey.PYKRAFT_DESCRIBE_IMAGE: self._answered(self._common),
            ApiKey.METADATA: self._answered(self._metadata),
            ApiKey.DESCRIBE_CLUSTER: self._answered(self._describe_cluster),
            ApiKey.DESCRIBE_CONFIGS: self._answered(self._describe_configs),
            **{key: self._forward for key in FORWARDED_APIS},
        }
        if replicas is not None:
            self._handlers |= {
                ApiKey.PRODUCE: self._produce,
                ApiKey.FETCH: self._fetch,
                ApiKey.LIST_OFFSETS: self._answered(self._list_offsets),
                ApiKey.OFFSET_FOR_LEADER_EPOCH: self._answered(self._offsets_for_leader_epochs),
                ApiKey.DESCRIBE_LOG_DIRS: self._answered(self._describe_log_dirs),
                ApiKey.DELETE_RECORDS: self._delete_records,
                ApiKey.INIT_PRODUCER_ID: self._init_producer_id,
                ApiKey.FIND_COORDINATOR: self._answered(self._find_coordinator),
                **{key: self._group_request for key in GROUP_COORDINATOR_APIS},
            }
        assert self._handlers.keys() == self.table.keys(), "advertised = handled"

    async def route(self, conn: ServerConnection, header: RequestHeader, message: Any) -> None:
        await self._handlers[header.api_key](conn, header, message)

    # -- handlers ----------------------------------------------------------------------------

    @staticmethod
    def _answered(answer: Callable[[int, Any], Awaitable[Any]]) -> Handler:
        """A handler that answers before the connection's next request is read."""

        async def handle(conn: ServerConnection, header: RequestHeader, message: Any) -> None:
            slot = conn.new_slot(header)
            slot.complete(await answer(header.api_version, message))

        return handle

    async def _forward(self, conn: ServerConnection, header: RequestHeader, message: Any) -> None:
        if self._forwarder is None or self._nursery is None:
            raise BrokerRequestRejected(
                f"api key {header.api_key}: this broker forwards no admin requests"
            )
        # in a task of its own: the connection's next requests are served meanwhile, and the
        # answer takes its place in the response order
        self._nursery.start_soon(self._forwarded, conn.new_slot(header), message)

    async def _forwarded(self, slot: ResponseSlot, message: Any) -> None:
        assert self._forwarder is not None
        slot.complete(await self._forwarder.forward(message, slot.version))

    async def _produce(self, conn: ServerConnection, header: RequestHeader, message: Any) -> None:
        assert self._replicas is not None
        if is_old_message_format(header.api_version):
            # Kafka 4 advertises Produce from v0 (older librdkafka insists on it) but parses
            # only v3+: v0-2 close the connection there, and must write nothing here
            raise BrokerRequestRejected(
                f"Produce v{header.api_version} carries message formats v0/v1, which Kafka 4 "
                "no longer reads"
            )
        # acks=0: Kafka sends no response at all, so the request takes no place in the order
        slot = None if message.acks == 0 else conn.new_slot(header)
        self._replicas.produce(slot, message)

    async def _fetch(self, conn: ServerConnection, header: RequestHeader, message: Any) -> None:
        assert self._replicas is not None
        # a long poll waits in the core's purgatory; later requests are read meanwhile
        self._replicas.fetch(conn.new_slot(header), message, header.api_version)

    async def _list_offsets(self, version: int, message: ListOffsetsRequest) -> Any:
        assert self._replicas is not None
        return list_offsets(self._replicas.core.partitions.by_name, self._image(), message,
                            version)

    async def _offsets_for_leader_epochs(
        self, version: int, message: OffsetForLeaderEpochRequest
    ) -> Any:
        assert self._replicas is not None
        return offsets_for_leader_epochs(
            self._replicas.core.partitions.by_name, self._image(), message
        )

    async def _describe_log_dirs(self, version: int, message: DescribeLogDirsRequest) -> Any:
        assert self._replicas is not None and self._log_dir is not None
        return describe_log_dirs(self._replicas.core.partitions, self._log_dir, message)

    async def _delete_records(
        self, conn: ServerConnection, header: RequestHeader, message: Any
    ) -> None:
        assert self._replicas is not None
        # waits in the core's purgatory for the replicas; later requests are read meanwhile
        self._replicas.delete_records(conn.new_slot(header), message)

    async def _init_producer_id(
        self, conn: ServerConnection, header: RequestHeader, message: Any
    ) -> None:
        assert self._producer_ids is not None and self._nursery is not None
        # may wait for a block from the controller: later requests are read meanwhile
        self._nursery.start_soon(self._producer_id_answered, conn.new_slot(header), message)

    async def _producer_id_answered(self, slot: ResponseSlot, message: Any) -> None:
        assert self._producer_ids is not None
        slot.complete(await self._producer_ids.init_producer_id(message))

    async def _find_coordinator(self, version: int, message: Any) -> Any:
        return find_coordinator(
            self._image(), message, version,
            listener_name=self._view.listener_name, creator=self._offsets_topic,
        )

    async def _group_request(
        self, conn: ServerConnection, header: RequestHeader, message: Any
    ) -> None:
        assert self._groups is not None
        # answered when the coordinator says (a JoinGroup waits for the rebalance); the next
        # requests of the connection are read meanwhile and answered in order
        host = conn.peer.rsplit(":", 1)[0]  # Kafka shows the address as InetAddress does: "/host"
        slot = conn.new_slot(header)
        if isinstance(message, OffsetCommitRequest):
            known, answer_to = commit_known_topics(self._image(), message, slot)
            if known is not None:
                self._groups.handle(answer_to, header, known, client_host=f"/{host}")
            return
        self._groups.handle(slot, header, message, client_host=f"/{host}")

    async def _common(self, version: int, message: Any) -> Any:
        return await self.apis.answer_common(
            message, node_id=self._view.node_id, image=self._image
        )

    async def _metadata(self, version: int, message: MetadataRequest) -> Any:
        """The answer's ``EncodedBody``, built in slices and kept per image."""
        if (refused := invalid_metadata_request(message, version)) is not None:
            return refused
        if self._auto_topics is not None:
            self._auto_topics.maybe_create(self._image(), message, version)
        return await self.metadata_answers.encoded_response(
            self._image(), message, version, self._view
        )

    async def _describe_cluster(self, version: int, message: DescribeClusterRequest) -> Any:
        return describe_cluster_response(self._image(), message, version, self._view)

    async def _describe_configs(self, version: int, message: DescribeConfigsRequest) -> Any:
        return await describe_configs_here(
            self._image(), message, version, self._static_configs
        )
