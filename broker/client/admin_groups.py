"""The admin client's consumer group calls (Kafka's ``Admin`` group methods).

Where each goes, as Kafka's admin client sends it: ListGroups to every
broker (each answers for the groups it coordinates), the others to the
group's coordinator (found with FindCoordinator, found again when it
moves: ``group_calls.call_coordinator``). Offsets are altered with an
OffsetCommit from outside the group (generation -1, no member id), which
the coordinator accepts only while the group has no members
(UNKNOWN_MEMBER_ID otherwise), and deleted with OffsetDelete, refused for
partitions of topics the group's members subscribe to
(GROUP_SUBSCRIBED_TO_TOPIC). Through ``bootstrap.controllers`` these calls
are refused: only brokers coordinate groups.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Final, TypeVar

import attrs
import trio

from broker.client.consumer_protocol import CONSUMER_PROTOCOL_TYPE, decode_assignment
from broker.client.errors import KafkaError, KafkaTimeoutError, error_from_code
from broker.client.group_calls import (
    call_coordinator,
    commit_offsets,
    fetch_committed,
    version_for,
)
from broker.client.group_requests import Coordinator
from broker.client.network import KafkaClient
from broker.client.types import OffsetAndMetadata, TopicPartition
from quorum.client import TrioKafkaConnection
from quorum.wire.api_keys import ApiKey
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    DescribeGroupsResponseDescribedGroup,
    ListGroupsRequest,
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
)

__all__ = ["ConsumerGroupDescription", "GroupAdminCalls", "GroupListing", "MemberDescription"]

_MOVED: Final = "moved"
T = TypeVar("T")


@attrs.frozen(kw_only=True)
class GroupListing:
    group_id: str
    protocol_type: str
    state: str = ""  # ListGroups v4+
    group_type: str = ""  # ListGroups v5+


@attrs.frozen(kw_only=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    # read from the member's ConsumerProtocolAssignment (consumer groups only)
    assignment: tuple[TopicPartition, ...] = ()


@attrs.frozen(kw_only=True)
class ConsumerGroupDescription:
    group_id: str
    state: str
    protocol_type: str
    # the assignor the group chose (DescribeGroups' protocol_data)
    assignor: str
    members: tuple[MemberDescription, ...]
    coordinator: Coordinator


def _described(group: DescribeGroupsResponseDescribedGroup,
               coordinator: Coordinator) -> ConsumerGroupDescription:
    consumer = group.protocol_type == CONSUMER_PROTOCOL_TYPE
    members = tuple(
        MemberDescription(
            member_id=m.member_id, group_instance_id=m.group_instance_id,
            client_id=m.client_id, host=m.client_host,
            assignment=decode_assignment(bytes(m.member_assignment)).partitions
            if consumer else (),
        )
        for m in group.members
    )
    return ConsumerGroupDescription(
        group_id=group.group_id, state=group.group_state, protocol_type=group.protocol_type,
        assignor=group.protocol_data, members=members, coordinator=coordinator,
    )


class GroupAdminCalls:
    """Mixed into ``Admin``: it provides ``_client`` and the two helpers below."""

    _client: KafkaClient

    if TYPE_CHECKING:
        def _brokers_only(self, call: str) -> None: ...

        def _budget_ms(self, timeout_ms: float | None) -> float: ...

    async def list_groups(
        self, *, states: Sequence[str] = (), timeout_ms: float | None = None
    ) -> list[GroupListing]:
        """Every group of every broker (ListGroups to each), ``states`` filtering (v4+)."""
        self._brokers_only("listGroups")
        client, budget = self._client, self._budget_ms(timeout_ms)
        with trio.move_on_after(budget / 1000) as scope:
            await client.refresh_metadata()
            found: dict[str, GroupListing] = {}
            for node in sorted(client.view.brokers):
                conn = await client.node_connection(node)
                version = version_for(conn, ApiKey.LIST_GROUPS)
                request = ListGroupsRequest(states_filter=tuple(states))
                response = await client.request(conn, request, version=version)
                if response.error_code != Errors.NONE:
                    raise error_from_code(response.error_code, None, context=f"broker {node}")
                for group in response.groups:
                    found[group.group_id] = GroupListing(
                        group_id=group.group_id, protocol_type=group.protocol_type,
                        state=group.group_state, group_type=group.group_type,
                    )
        if scope.cancelled_caught:
            raise KafkaTimeoutError(f"listGroups did not finish within {budget:.0f} ms")
        return [found[g] for g in sorted(found)]

    async def _at_coordinator(self, group_id: str, call: str, timeout_ms: float | None,
                              send: Callable[[TrioKafkaConnection, Coordinator], Awaitable[T]]
                              ) -> T:
        self._brokers_only(call)
        client, where = self._client, {}

        def found(coordinator: Coordinator | None) -> None:
            where["at"] = coordinator

        async def at(conn: TrioKafkaConnection) -> T:
            coordinator = where.get("at") or Coordinator(-1, *_host_port(conn.address))
            return await send(conn, coordinator)

        return await call_coordinator(client, group_id, at, timeout_ms=self._budget_ms(timeout_ms),
                                      call=call, on_found=found)

    async def describe_groups(
        self, group_ids: Sequence[str], *, timeout_ms: float | None = None
    ) -> dict[str, ConsumerGroupDescription]:
        """Each group's state, assignor and members (with their partitions).

        A group nobody knows is described in state ``Dead`` with no members, as Kafka's is.
        """
        out = {}
        for group_id in group_ids:
            async def send(conn: TrioKafkaConnection, coordinator: Coordinator,
                           group_id: str = group_id) -> ConsumerGroupDescription:
                version = version_for(conn, ApiKey.DESCRIBE_GROUPS)
                response = await self._client.request(
                    conn, DescribeGroupsRequest(groups=(group_id,)), version=version)
                group = response.groups[0]
                _raise(group.error_code, group.error_message, f"group {group_id}")
                return _described(group, coordinator)
            out[group_id] = await self._at_coordinator(group_id, "describeConsumerGroups",
                                                       timeout_ms, send)
        return out

    async def delete_groups(
        self, group_ids: Sequence[str], *, timeout_ms: float | None = None,
        raise_on_error: bool = True,
    ) -> dict[str, KafkaError | None]:
        """Delete empty groups and their offsets (NON_EMPTY_GROUP while members remain)."""
        out: dict[str, KafkaError | None] = {}
        for group_id in group_ids:
            async def send(conn: TrioKafkaConnection, _c: Coordinator,
                           group_id: str = group_id) -> KafkaError | None:
                version = version_for(conn, ApiKey.DELETE_GROUPS)
                response = await self._client.request(
                    conn, DeleteGroupsRequest(groups_names=(group_id,)), version=version)
                code = next((r.error_code for r in response.results if r.group_id == group_id),
                            Errors.UNKNOWN_SERVER_ERROR)
                _raise_moved(code)
                return None if code == Errors.NONE else error_from_code(
                    code, None, context=f"group {group_id}")
            out[group_id] = await self._at_coordinator(group_id, "deleteConsumerGroups",
                                                       timeout_ms, send)
        if raise_on_error:
            for group_id in group_ids:
                if (error := out[group_id]) is not None:
                    raise error
        return out

    async def list_group_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None = None, *,
        timeout_ms: float | None = None,
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """The group's committed offsets (of ``partitions``, or all it has)."""
        self._brokers_only("listConsumerGroupOffsets")
        found = await fetch_committed(self._client, group_id, partitions,
                                      timeout_ms=self._budget_ms(timeout_ms))
        return {tp: o for tp, o in sorted(found.items()) if o is not None}

    async def alter_group_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata | int], *,
        timeout_ms: float | None = None, raise_on_error: bool = True,
    ) -> dict[TopicPartition, KafkaError | None]:
        """Set the group's committed offsets (the group must have no members)."""
        self._brokers_only("alterConsumerGroupOffsets")
        wanted = {tp: o if isinstance(o, OffsetAndMetadata) else OffsetAndMetadata(o)
                  for tp, o in offsets.items()}
        errors = await commit_offsets(self._client, group_id, wanted,
                                      timeout_ms=self._budget_ms(timeout_ms))
        return _outcome(errors, wanted, raise_on_error, "alter offset of")

    async def delete_group_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition], *,
        timeout_ms: float | None = None, raise_on_error: bool = True,
    ) -> dict[TopicPartition, KafkaError | None]:
        """Forget the group's committed offsets of ``partitions`` (OffsetDelete)."""
        wanted = sorted(set(partitions))
        by_topic: dict[str, list[int]] = {}
        for tp in wanted:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        request = OffsetDeleteRequest(group_id=group_id, topics=tuple(
            OffsetDeleteRequestTopic(name=t, partitions=tuple(
                OffsetDeleteRequestPartition(partition_index=p) for p in ps))
            for t, ps in by_topic.items()))

        async def send(conn: TrioKafkaConnection, _c: Coordinator) -> dict[TopicPartition, Errors]:
            version = version_for(conn, ApiKey.OFFSET_DELETE)
            response = await self._client.request(conn, request, version=version)
            _raise(response.error_code, None, f"group {group_id}")
            return {TopicPartition(t.name, p.partition_index): Errors.from_code(p.error_code)
                    for t in response.topics for p in t.partitions}

        errors = await self._at_coordinator(group_id, "deleteConsumerGroupOffsets", timeout_ms,
                                            send)
        return _outcome(errors, wanted, raise_on_error, "delete offset of")


def _host_port(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host, int(port)


def _raise_moved(code: int) -> None:
    """A moved or loading coordinator: raised so that ``call_coordinator`` retries."""
    error = Errors.from_code(code)
    if error in (Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE,
                 Errors.COORDINATOR_LOAD_IN_PROGRESS):
        raise KafkaError(error, _MOVED)


def _raise(code: int, message: str | None, context: str) -> None:
    _raise_moved(code)
    if code != Errors.NONE:
        raise error_from_code(code, message, context=context)


def _outcome(errors: Mapping[TopicPartition, Errors], order: Iterable[TopicPartition],
             raise_on_error: bool, what: str) -> dict[TopicPartition, KafkaError | None]:
    out = {
        tp: None if error is Errors.NONE else error_from_code(error, None, context=f"{what} {tp}")
        for tp, error in errors.items()
    }
    if raise_on_error:
        for tp in order:
            if (failure := out.get(tp)) is not None:
                raise failure
    return out
