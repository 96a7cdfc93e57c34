"""``Admin``: the trio admin client (Kafka's ``Admin`` / ``kafka-*`` tools' calls).

Usage::

    async with Admin({"bootstrap.servers": "localhost:9092"}) as admin:
        await admin.create_topics([NewTopic(name="orders", num_partitions=6,
                                            replication_factor=3)])
        print(await admin.describe_topics(["orders"]))

Where each request goes, as Kafka's admin client sends it: metadata
changes (topics, partitions, configs, elections, reassignments) to the
broker the metadata names as controller, which forwards them to the active
controller; ListOffsets and DeleteRecords to each partition's leader;
DescribeConfigs and IncrementalAlterConfigs of a broker to that broker;
DescribeLogDirs to every broker asked about; DescribeQuorum through any
broker. With ``bootstrap.controllers`` instead of ``bootstrap.servers``
(KIP-919) every request goes to the active controller
(``active_controller``); what only brokers answer (offsets, records, log
directories, consumer groups) is refused there with UNSUPPORTED_VERSION.
The consumer group calls (list, describe, delete groups; list, alter,
delete their offsets) come from ``admin_groups.GroupAdminCalls``. Connection failures
and retriable errors (NOT_CONTROLLER, NOT_LEADER_OR_FOLLOWER, ...) are
retried after a metadata refresh (or a new look for the active controller)
and ``retry.backoff.ms``, until ``default.api.timeout.ms`` (or the call's
``timeout_ms``); the timeout names Kafka's call, as Kafka's
``TimeoutException`` does. A call that changes several items raises the
first item's error (``KafkaError``, with Kafka's error name and the
server's message) unless ``raise_on_error=False`` asks for every item's
outcome. ``describe_image`` is pykraft's own: the committed metadata image
as JSON (what ``kraft topics --describe`` prints).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

import trio

from broker.client import admin_requests as req
from broker.client.active_controller import ActiveController, EndpointType
from broker.client.admin_groups import GroupAdminCalls
from broker.client.admin_types import (
    AlterConfigOp,
    ClusterDescription,
    ConfigEntry,
    ConfigResource,
    ElectionType,
    LogDirDescription,
    NewPartitions,
    NewTopic,
    PartitionReassignment,
    ResourceType,
    TopicDescription,
)
from broker.client.cluster import BrokerInfo, ClusterView, MetadataTracker
from broker.client.errors import ClientClosedError, KafkaError, KafkaTimeoutError, error_from_code
from broker.client.network import KafkaClient
from broker.client.offsets import list_offsets
from broker.client.settings import AdminClientSettings, settings_from
from broker.client.types import OffsetAndTimestamp, TopicPartition
from quorum.client import TrioKafkaConnection
from quorum.controller_client import error_codes_in
from quorum.describe import (
    DescribeQuorumError,
    QuorumInfo,
    describe_quorum_request,
    quorum_info_from_response,
)
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeLogDirsRequest,
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
)
from quorum.wire.messages.pykraft_describe_image import (
    PykraftDescribeImageRequest,
    PykraftDescribeImageResponse,
)

__all__ = ["Admin"]

_ids = itertools.count(1)
_METADATA_MAX_VERSION: Final = 12
# an answer with one of these: the controller moved; find it again and resend
_MOVED: Final = frozenset({Errors.NOT_CONTROLLER})
# DescribeQuorum: any retriable error (no leader yet, the leader moved) is worth a retry
_RETRIABLE: Final = frozenset(e for e in Errors if e.retriable)
_BROKERS_ONLY: Final = "needs bootstrap.servers: only brokers answer it"


class Admin(GroupAdminCalls):
    def __init__(self, config: AdminClientSettings | Mapping[str, str]) -> None:
        settings = self.settings = settings_from(AdminClientSettings, config)
        self.client_id = settings.client_id or f"adminclient-{next(_ids)}"
        tracker = MetadataTracker(
            metadata_max_age_ms=settings.metadata_max_age_ms,
            retry_backoff_ms=settings.retry_backoff_ms,
            allow_auto_topic_creation=False,
        )
        self._client = KafkaClient(settings, tracker, client_id=self.client_id)
        self._controller = (
            ActiveController(self._client, settings.bootstrap_controllers)
            if settings.bootstrap_controllers else None
        )
        self._closed = False

    async def __aenter__(self) -> Admin:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        self._closed = True
        await self._client.aclose()

    # -- sending -------------------------------------------------------------------------

    def _budget_ms(self, timeout_ms: float | None) -> float:
        return self.settings.default_api_timeout_ms if timeout_ms is None else timeout_ms

    async def _call(
        self,
        build: Callable[[int], Any],
        *,
        timeout_ms: float | None = None,
        node: int | None = None,
        to_controller: bool = False,
        retry_codes: frozenset[Errors] = _MOVED,
        call: str | None = None,
    ) -> Any:
        """Send ``build(remaining_ms)`` until an answer without a ``retry_codes`` error.

        ``call`` is Kafka's name of the admin call, for the timeout's message.
        """
        if self._closed:
            raise ClientClosedError("the admin client is closed")
        client, budget = self._client, self._budget_ms(timeout_ms)
        deadline = trio.current_time() + budget / 1000
        problem = "no attempt finished"
        request = None
        with trio.move_on_at(deadline):
            while True:
                remaining = int((deadline - trio.current_time()) * 1000)
                request = build(max(remaining, 0))
                try:
                    conn = await self._connection(node, to_controller)
                    response = await client.request(conn, request)
                    moved = retry_codes & error_codes_in(response)
                    if not moved:
                        return response
                    problem = f"{Errors(min(moved)).name} from {conn.address}"
                    self._lost_track(problem)
                except KafkaError as exc:
                    if not exc.retriable:
                        raise
                    problem = str(exc)
                    self._lost_track(problem, exc.error or Errors.NETWORK_EXCEPTION)
                await trio.sleep(self.settings.retry_backoff_ms / 1000)
                if self._controller is None:
                    await client.maybe_refresh_metadata()
        name = call or _call_name(request)
        raise KafkaTimeoutError(
            f"Timed out waiting for a node assignment. Call: {name} "
            f"(after {budget:.0f} ms; last problem: {problem})"
        )

    def _lost_track(self, problem: str, error: Errors | None = None) -> None:
        """An answer or a failure says the target moved: look it up again before the retry."""
        if self._controller is not None:
            self._controller.forget()
        elif error is None:
            self._client.tracker.request_update(problem)
        else:
            self._client.tracker.observe_error(error, "admin")

    async def _connection(self, node: int | None, to_controller: bool) -> TrioKafkaConnection:
        if self._controller is not None:
            return await self._controller.connection()
        client = self._client
        if node is not None or to_controller:
            await client.maybe_refresh_metadata()
        view = client.view
        if node is not None:
            return await client.node_connection(node)
        if to_controller and view.controller_id in view.brokers:
            return await client.node_connection(view.controller_id)
        return await client.pool.any_connection(view)

    def _brokers_only(self, call: str) -> None:
        if self._controller is not None:
            raise KafkaError(Errors.UNSUPPORTED_VERSION, f"{call} {_BROKERS_ONLY}")

    async def _metadata(self, topics: Sequence[str] | None, timeout_ms: float | None) -> Any:
        request = MetadataRequest(
            topics=None if topics is None else tuple(MetadataRequestTopic(name=t) for t in topics),
            allow_auto_topic_creation=False,
        )
        return await self._call(_fixed(request), timeout_ms=timeout_ms)

    # -- topics --------------------------------------------------------------------------

    async def create_topics(
        self, topics: Sequence[NewTopic], *, validate_only: bool = False,
        timeout_ms: float | None = None, raise_on_error: bool = True,
    ) -> dict[str, KafkaError | None]:
        response = await self._call(
            lambda ms: req.create_topics_request(topics, timeout_ms=ms, validate_only=validate_only),
            timeout_ms=timeout_ms, to_controller=True,
        )
        return self._outcome(req.read_create_topics(response), [t.name for t in topics],
                             raise_on_error)

    async def delete_topics(
        self, names: Sequence[str], *, timeout_ms: float | None = None,
        raise_on_error: bool = True,
    ) -> dict[str, KafkaError | None]:
        response = await self._call(
            lambda ms: req.delete_topics_request(names, timeout_ms=ms),
            timeout_ms=timeout_ms, to_controller=True,
        )
        return self._outcome(req.read_delete_topics(response), names, raise_on_error)

    async def create_partitions(
        self, topics: Mapping[str, NewPartitions], *, validate_only: bool = False,
        timeout_ms: float | None = None, raise_on_error: bool = True,
    ) -> dict[str, KafkaError | None]:
        response = await self._call(
            lambda ms: req.create_partitions_request(
                topics, timeout_ms=ms, validate_only=validate_only
            ),
            timeout_ms=timeout_ms, to_controller=True,
        )
        return self._outcome(req.read_create_partitions(response), list(topics), raise_on_error)

    async def list_topics(
        self, *, include_internal: bool = False, timeout_ms: float | None = None
    ) -> list[str]:
        if self._controller is not None:
            image = await self.describe_image(timeout_ms=timeout_ms)
            return sorted(req.read_image_topics(image))
        response: MetadataResponse = await self._metadata(None, timeout_ms)
        return sorted(
            t.name for t in response.topics
            if t.name and t.error_code == Errors.NONE and (include_internal or not t.is_internal)
        )

    async def describe_topics(
        self, names: Sequence[str], *, timeout_ms: float | None = None
    ) -> dict[str, TopicDescription]:
        """Each topic's partitions (leader, epoch, replicas, ISR); raises for an unknown topic."""
        if self._controller is not None:
            found: Mapping[str, TopicDescription | KafkaError] = req.read_image_topics(
                await self.describe_image(timeout_ms=timeout_ms)
            )
        else:
            found = req.read_topic_descriptions(await self._metadata(names, timeout_ms))
        out = {}
        for name in names:
            description = found.get(name) or error_from_code(
                Errors.UNKNOWN_TOPIC_OR_PARTITION, None, context=f"topic {name}"
            )
            if isinstance(description, KafkaError):
                raise description
            out[name] = description
        return out

    # -- the cluster ---------------------------------------------------------------------

    async def describe_cluster(self, *, timeout_ms: float | None = None) -> ClusterDescription:
        """Cluster id, controller and brokers.

        Through brokers: the brokers, and as controller a broker, as Kafka's brokers report
        it (DescribeCluster where the broker serves it, else Metadata, as kafka-python does).
        Through controllers: the controllers, and the active one as controller.
        """
        endpoint = EndpointType.BROKER if self._controller is None else EndpointType.CONTROLLER
        try:
            answer: DescribeClusterResponse = await self._call(
                _fixed(DescribeClusterRequest(endpoint_type=int(endpoint))),
                timeout_ms=timeout_ms, call="describeCluster",
            )
        except KafkaError as exc:
            if exc.error is not Errors.UNSUPPORTED_VERSION or self._controller is not None:
                raise
            response = await self._metadata([], timeout_ms)
            brokers = tuple(BrokerInfo(b.node_id, b.host, b.port, b.rack) for b in response.brokers)
            return self._cluster(response.cluster_id, response.controller_id, brokers)
        if answer.error_code != Errors.NONE:
            raise error_from_code(answer.error_code, answer.error_message)
        brokers = tuple(BrokerInfo(b.broker_id, b.host, b.port, b.rack) for b in answer.brokers)
        return self._cluster(answer.cluster_id, answer.controller_id, brokers)

    @staticmethod
    def _cluster(
        cluster_id: str | None, controller_id: int, brokers: tuple[BrokerInfo, ...]
    ) -> ClusterDescription:
        controller = next((b for b in brokers if b.node_id == controller_id), None)
        return ClusterDescription(
            cluster_id=cluster_id, controller=controller,
            brokers=tuple(sorted(brokers, key=lambda b: b.node_id)),
        )

    async def describe_metadata_quorum(self, *, timeout_ms: float | None = None) -> QuorumInfo:
        """The Raft quorum as its leader describes it.

        Through brokers, any broker forwards the call to the quorum leader; a DescribeCluster
        goes first, so an address that is a controller listener is named as such
        (MISMATCHED_ENDPOINT_TYPE). Through controllers, the active controller answers.
        """
        if self._controller is None:
            await self.describe_cluster(timeout_ms=timeout_ms)
        response = await self._call(
            _fixed(describe_quorum_request()), timeout_ms=timeout_ms, to_controller=True,
            retry_codes=_RETRIABLE, call="describeMetadataQuorum",
        )
        try:
            return quorum_info_from_response(response)
        except DescribeQuorumError as exc:
            raise KafkaError(exc.error, str(exc)) from None

    async def describe_image(self, *, timeout_ms: float | None = None) -> dict[str, Any]:
        """The committed metadata image of the node answering, as JSON values (pykraft's own).

        Through controllers the active controller's; through brokers a broker's, which may
        trail the controller's by the records that broker has not fetched yet.
        """
        response: PykraftDescribeImageResponse = await self._call(
            _fixed(PykraftDescribeImageRequest(include_image=True)), timeout_ms=timeout_ms,
            call="describeImage",
        )
        if response.error_code != Errors.NONE or response.image_json is None:
            raise error_from_code(response.error_code, None, context="DescribeImage")
        image: dict[str, Any] = json.loads(response.image_json)
        return image

    # -- configs -------------------------------------------------------------------------

    async def describe_configs(
        self, resources: Sequence[ConfigResource], *, timeout_ms: float | None = None
    ) -> dict[ConfigResource, dict[str, ConfigEntry]]:
        """Each resource's configs; a broker's are asked of that broker."""
        out: dict[ConfigResource, dict[str, ConfigEntry]] = {}
        for node, group in self._by_config_target(resources).items():
            response = await self._call(
                _fixed(req.describe_configs_request(group)), timeout_ms=timeout_ms, node=node
            )
            for resource, result in req.read_describe_configs(response).items():
                if isinstance(result, KafkaError):
                    raise result
                out[resource] = result
        return out

    async def incremental_alter_configs(
        self, changes: Mapping[ConfigResource, Sequence[AlterConfigOp]], *,
        validate_only: bool = False, timeout_ms: float | None = None,
        raise_on_error: bool = True,
    ) -> dict[ConfigResource, KafkaError | None]:
        out: dict[ConfigResource, KafkaError | None] = {}
        for node, group in self._by_config_target(changes).items():
            subset = {resource: changes[resource] for resource in group}
            request = req.incremental_alter_configs_request(subset, validate_only=validate_only)
            response = await self._call(_fixed(request), timeout_ms=timeout_ms, node=node)
            out.update(req.read_incremental_alter_configs(response))
        return self._outcome(out, list(changes), raise_on_error)

    @staticmethod
    def _by_config_target(
        resources: Iterable[ConfigResource],
    ) -> dict[int | None, list[ConfigResource]]:
        """A named broker's resources go to that broker; the rest to any broker."""
        grouped: dict[int | None, list[ConfigResource]] = {}
        for resource in resources:
            node = None
            if resource.type in (ResourceType.BROKER, ResourceType.BROKER_LOGGER) and resource.name:
                node = int(resource.name)
            grouped.setdefault(node, []).append(resource)
        return grouped

    # -- offsets and records -------------------------------------------------------------

    async def list_offsets(
        self, specs: Mapping[TopicPartition, int], *, timeout_ms: float | None = None
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """Offsets by ``OffsetSpec`` (EARLIEST, LATEST, MAX_TIMESTAMP) or by timestamp."""
        self._brokers_only("listOffsets")
        return await list_offsets(self._client, specs, timeout_ms=self._budget_ms(timeout_ms))

    async def delete_records(
        self, before: Mapping[TopicPartition, int], *, timeout_ms: float | None = None
    ) -> dict[TopicPartition, int]:
        """Move each partition's log start up to ``before[tp]``; returns the new low watermarks."""
        self._brokers_only("deleteRecords")
        client, budget = self._client, self._budget_ms(timeout_ms)
        client.tracker.add_topics({tp.topic for tp in before})
        remaining, done = dict(before), {}
        with trio.move_on_after(budget / 1000):
            while remaining:
                await client.maybe_refresh_metadata()
                for node, group in _by_leader(client.view, remaining).items():
                    for tp, (error, low) in (await self._delete_on(node, group, budget)).items():
                        if error is Errors.NONE:
                            done[tp] = low
                            remaining.pop(tp, None)
                        elif not error.retriable:
                            raise error_from_code(error, None, context=f"DeleteRecords for {tp}")
                        else:
                            client.tracker.observe_error(error, f"DeleteRecords for {tp}")
                if remaining:
                    await trio.sleep(self.settings.retry_backoff_ms / 1000)
            return done
        raise KafkaTimeoutError(f"DeleteRecords did not finish within {budget:.0f} ms "
                                f"for {sorted(str(tp) for tp in remaining)}")

    async def _delete_on(
        self, node: int, offsets: Mapping[TopicPartition, int], budget: float
    ) -> dict[TopicPartition, tuple[Errors, int]]:
        request = req.delete_records_request(offsets, timeout_ms=int(budget))
        try:
            conn = await self._client.node_connection(node)
            response = await self._client.request(conn, request, timeout_ms=int(budget))
        except KafkaError as exc:
            if not exc.retriable:
                raise
            return {}
        return req.read_delete_records(response)

    # -- leaders and reassignments -------------------------------------------------------

    async def elect_leaders(
        self, election: ElectionType, partitions: Iterable[TopicPartition] | None = None, *,
        timeout_ms: float | None = None, raise_on_error: bool = True,
    ) -> dict[TopicPartition, KafkaError | None]:
        """Elect leaders (None: every partition); ELECTION_NOT_NEEDED is reported per item."""
        wanted = None if partitions is None else list(partitions)
        response = await self._call(
            lambda ms: req.elect_leaders_request(election, wanted, timeout_ms=ms),
            timeout_ms=timeout_ms, to_controller=True,
        )
        results = req.read_elect_leaders(response)
        return self._outcome(results, wanted or list(results), raise_on_error)

    async def alter_partition_reassignments(
        self, reassignments: Mapping[TopicPartition, Sequence[int] | None], *,
        timeout_ms: float | None = None, raise_on_error: bool = True,
    ) -> dict[TopicPartition, KafkaError | None]:
        """Move partitions to new replica lists (None cancels a reassignment in progress)."""
        response = await self._call(
            lambda ms: req.alter_reassignments_request(reassignments, timeout_ms=ms),
            timeout_ms=timeout_ms, to_controller=True,
        )
        return self._outcome(
            req.read_alter_reassignments(response), list(reassignments), raise_on_error
        )

    async def list_partition_reassignments(
        self, partitions: Iterable[TopicPartition] | None = None, *,
        timeout_ms: float | None = None,
    ) -> dict[TopicPartition, PartitionReassignment]:
        wanted = None if partitions is None else list(partitions)
        response = await self._call(
            lambda ms: req.list_reassignments_request(wanted, timeout_ms=ms),
            timeout_ms=timeout_ms, to_controller=True,
        )
        return req.read_list_reassignments(response)

    async def describe_log_dirs(
        self, broker_ids: Iterable[int] | None = None, *, timeout_ms: float | None = None
    ) -> dict[int, dict[str, LogDirDescription]]:
        """Each broker's log directories and the replicas in them (every broker by default)."""
        self._brokers_only("describeLogDirs")
        if broker_ids is None:
            await self._client.refresh_metadata()
            broker_ids = sorted(self._client.view.brokers)
        out = {}
        for broker in broker_ids:
            request = DescribeLogDirsRequest(topics=None)  # every partition it hosts
            response = await self._call(_fixed(request), timeout_ms=timeout_ms, node=broker)
            out[broker] = req.read_log_dirs(response)
        return out

    # -- results -------------------------------------------------------------------------

    @staticmethod
    def _outcome(results: dict[Any, KafkaError | None], order: Iterable[Any],
                 raise_on_error: bool) -> dict[Any, KafkaError | None]:
        if raise_on_error:
            req.raise_first(results, order)
        return results


def _by_leader(
    view: ClusterView, values: Mapping[TopicPartition, int]
) -> dict[int, dict[TopicPartition, int]]:
    """``values`` grouped by each partition's leader (leaderless ones left out)."""
    grouped: dict[int, dict[TopicPartition, int]] = {}
    for tp, value in values.items():
        leader = view.leader_of(tp)
        if leader is not None:
            grouped.setdefault(leader.node_id, {})[tp] = value
    return grouped


def _call_name(request: Any) -> str:
    """Kafka's call name for a request: ``createTopics`` for CreateTopicsRequest."""
    name = type(request).__name__.removesuffix("Request")
    return name[:1].lower() + name[1:]


def _fixed(request: Any) -> Callable[[int], Any]:
    """A builder for a request that carries no timeout."""
    return lambda _remaining_ms: request

