"""The trio shell of a consumer's group membership, driven from the consumer's poll.

``GroupMember`` runs the steps ``GroupCore`` asks for, as the consumer runs
its fetch plans: FindCoordinator, JoinGroup and SyncGroup go out in
background tasks whose answers come back as closures the polling task
applies; what must happen in the polling task itself happens in ``drive``
(Kafka's ``ConsumerCoordinator.poll``): the commit and the listener's
``on_partitions_revoked`` / ``on_partitions_lost`` before a join, and after
a rebalance the new assignment given to the ``FetchCore``, the listener's
``on_partitions_assigned`` and a look-up of the committed offsets of the
new partitions (those without one reset by ``auto.offset.reset``).

Heartbeats come from a pacer task per generation, as Kafka's heartbeat
thread: every ``heartbeat.interval.ms`` from the JoinGroup answer on
(COMPLETING_REBALANCE and STABLE), also while the caller is busy between
polls. It also watches
``max.poll.interval.ms``: past it the member leaves the group (LeaveGroup
for a dynamic member; a static one just forgets its generation) and finds
its partitions lost at the next poll. Auto-commit sends the consumed
positions every ``auto.commit.interval.ms`` from ``drive``, before a
rebalance, and at close.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Final

import trio

from broker.client.assignors import Assignor, RangeAssignor, RoundRobinAssignor
from broker.client.errors import KafkaError
from broker.client.fetch_core import FetchCore
from broker.client.group_calls import fetch_committed, find_coordinator, version_for
from broker.client.group_commits import GroupCommits
from broker.client.group_core import (
    FindCoordinator,
    GroupCore,
    HeartbeatTarget,
    JoinPlan,
    MemberState,
    PrepareJoin,
    SyncPlan,
)
from broker.client.group_requests import leave_group_error, leave_group_request
from broker.client.network import KafkaClient, now_ms
from broker.client.positions import FetchState
from broker.client.settings import ConsumerSettings
from broker.client.sticky_assignor import CooperativeStickyAssignor
from broker.client.types import OffsetAndMetadata, TopicPartition
from quorum.wire.api_keys import ApiKey
from quorum.wire.error_codes import Errors
from quorum.wire.messages import HeartbeatRequest

__all__ = ["CommitCallback", "ConsumerRebalanceListener", "GroupMember", "new_group_core"]

logger = logging.getLogger(__name__)
Apply = Callable[[], None]
Spawn = Callable[[Callable[[], Awaitable[Apply]]], None]
CommitCallback = Callable[[Mapping[TopicPartition, OffsetAndMetadata], KafkaError | None], None]


class ConsumerRebalanceListener:
    """Kafka's ``ConsumerRebalanceListener``; override what you need (coroutines).

    They run inside ``poll`` (or ``close``/``unsubscribe``), so they may call the
    consumer, ``commit`` included. ``on_partitions_lost`` defaults to revoked.
    """

    async def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        return None

    async def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        return None

    async def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        await self.on_partitions_revoked(partitions)


_ASSIGNORS: Final[Mapping[str, Callable[[], Assignor]]] = {
    "range": RangeAssignor,
    "roundrobin": RoundRobinAssignor,
    "cooperative-sticky": CooperativeStickyAssignor,
}


def new_group_core(settings: ConsumerSettings) -> GroupCore:
    """The membership core with the assignors ``partition.assignment.strategy`` names."""
    return GroupCore(settings, [_ASSIGNORS[name]() for name in settings.partition_assignment_strategy])


class GroupMember:
    def __init__(
        self, core: GroupCore, client: KafkaClient, fetch: FetchCore, spawn: Spawn,
        start_soon: Callable[[Callable[[], Awaitable[None]]], None],
    ) -> None:
        self.core = core
        self.settings = core.settings
        self._client = client
        self._fetch = fetch
        self._spawn = spawn
        self._start_soon = start_soon
        self.listener = ConsumerRebalanceListener()
        self.in_callback = False
        # the caller is inside poll (waiting for records): not a poll timeout however long
        self.polling = False
        self._last_poll_ms = now_ms()
        self._auto_commit = self.settings.enable_auto_commit
        self._next_auto_commit_ms = now_ms() + self.settings.auto_commit_interval_ms
        self._pacer: trio.CancelScope | None = None
        self._pacing: HeartbeatTarget | None = None
        # partitions whose committed offset was asked for since they were assigned
        self._asked: set[TopicPartition] = set()
        self.commits = GroupCommits(core, client, fetch, spawn)

    # -- driven by the polling task ------------------------------------------------------

    def note_poll(self) -> None:
        """The caller polls (Kafka resets its poll timer at each poll, and while in it)."""
        self._last_poll_ms = now_ms()

    async def drive(self) -> None:
        """Take the steps the core asks for; apply finished rebalances (polling task)."""
        core, client = self.core, self._client
        self.note_poll()
        for _ in range(4):  # a prepare, then the join it allows: bounded, never a busy loop
            needed = core.metadata_topics() | {tp.topic for tp in self._fetch.positions.assigned}
            client.tracker.retain_topics(needed)
            client.tracker.add_topics(needed)
            step = core.next_step(now_ms(), client.view)
            if step is None:
                break
            if isinstance(step, PrepareJoin):
                await self._prepare(step)
                continue
            self._start(step)
            break
        for change in core.take_changes():
            self._fetch.assign(change.assigned)
            self._asked.intersection_update(change.assigned)
            client.tracker.add_topics({tp.topic for tp in change.assigned})
            if change.revoked:
                await self._call(self.listener.on_partitions_revoked, change.revoked)
            await self._call(self.listener.on_partitions_assigned, change.added)
        self._look_up_committed()
        self._keep_pacer()
        core.raise_pending_error()
        if self._auto_commit and now_ms() >= self._next_auto_commit_ms:
            self._next_auto_commit_ms = now_ms() + self.settings.auto_commit_interval_ms
            if core.state is MemberState.STABLE or not core.subscribed:
                self.commits.commit_async(None, None)

    def wait_ms(self, now: float) -> float:
        waits = [core_wait] if (core_wait := self.core.wait_ms(now)) is not None else []
        if self._auto_commit:
            waits.append(self._next_auto_commit_ms - now)
        return max(0.0, min(waits, default=math.inf))

    async def _call(self, method: Callable[[set[TopicPartition]], Awaitable[None]],
                    partitions: Iterable[TopicPartition]) -> None:
        self.in_callback = True
        try:
            await method(set(partitions))
        finally:
            self.in_callback = False

    async def _prepare(self, step: PrepareJoin) -> None:
        if step.commit and self._auto_commit:
            try:
                await self.commits.commit(None, self.settings.default_api_timeout_ms)
            except KafkaError as exc:
                logger.warning("auto-commit before rebalancing group %s failed: %s",
                               self.core.group_id, exc)
        if step.lost:
            await self._call(self.listener.on_partitions_lost, step.lost)
        if step.revoked:
            await self._call(self.listener.on_partitions_revoked, step.revoked)
        self._fetch.assign(self.core.owned)
        self.core.join_prepared()

    def _start(self, step: FindCoordinator | JoinPlan | SyncPlan) -> None:
        core, client = self.core, self._client
        if isinstance(step, FindCoordinator):
            async def find() -> Apply:
                try:
                    found = await find_coordinator(client, core.group_id)
                except KafkaError as exc:
                    error = exc.error or Errors.NETWORK_EXCEPTION
                    client.tracker.observe_error(error, "FindCoordinator")
                    return lambda: core.handle_coordinator(None, error, now_ms())
                return lambda: core.handle_coordinator(found, Errors.NONE, now_ms())
            self._spawn(find)
            return
        key = ApiKey.JOIN_GROUP if isinstance(step, JoinPlan) else ApiKey.SYNC_GROUP
        # JoinGroup waits for the whole group: up to the rebalance timeout on top
        extra = self.settings.max_poll_interval_ms if key is ApiKey.JOIN_GROUP else 0

        async def send() -> Apply:
            try:
                conn = await client.node_connection(step.node)
                response = await client.request(conn, step.request, timeout_ms=extra,
                                                version=version_for(conn, key))
            except KafkaError as exc:
                failure = exc
                return lambda: core.handle_failure(failure, now_ms())
            if key is ApiKey.JOIN_GROUP:
                return lambda: core.handle_join_response(response, now_ms())
            return lambda: core.handle_sync_response(response, now_ms())
        self._spawn(send)

    def _look_up_committed(self) -> None:
        """Committed offsets for the assigned partitions that have no position."""
        positions = self._fetch.positions
        wanted = [tp for tp in positions.initializing() if tp not in self._asked]
        if not wanted:
            return
        self._asked.update(wanted)
        positions.hold(wanted)
        core, client = self.core, self._client

        async def look_up() -> Apply:
            try:
                found = await fetch_committed(
                    client, core.group_id, wanted, timeout_ms=self.settings.default_api_timeout_ms,
                    require_stable=True, coordinator=core.coordinator,
                )
            except KafkaError as exc:
                failure = exc
                def failed() -> None:
                    positions.release(wanted)
                    self._asked.difference_update(wanted)
                    raise failure
                return failed
            return lambda: self._apply_committed(wanted, found)
        self._spawn(look_up)

    def _apply_committed(self, wanted: list[TopicPartition],
                         found: Mapping[TopicPartition, OffsetAndMetadata | None]) -> None:
        positions = self._fetch.positions
        positions.release(wanted)
        for tp in wanted:
            committed = found.get(tp)
            if committed is None or not positions.is_assigned(tp):
                continue  # no offset: auto.offset.reset decides
            if positions.state_of(tp).state is FetchState.INITIALIZING:
                positions.seek(tp, committed.offset, offset_epoch=committed.leader_epoch)

    # -- heartbeats ----------------------------------------------------------------------

    def _keep_pacer(self) -> None:
        target = self.core.heartbeat_target()
        if target == self._pacing:
            return
        if self._pacer is not None:
            self._pacer.cancel()
            self._pacer = None
        self._pacing = target
        if target is not None:
            scope = self._pacer = trio.CancelScope()
            self._start_soon(lambda: self._beat(target, scope))

    async def _beat(self, target: HeartbeatTarget, scope: trio.CancelScope) -> None:
        client, settings, core = self._client, self.settings, self.core
        request = HeartbeatRequest(group_id=target.group_id, generation_id=target.generation,
                                   member_id=target.member_id,
                                   group_instance_id=target.instance_id)
        with scope:
            while True:
                await trio.sleep(settings.heartbeat_interval_ms / 1000)
                if not self.polling and now_ms() - self._last_poll_ms > settings.max_poll_interval_ms:
                    await self._leave_on_poll_timeout(target)
                    return
                try:
                    conn = await client.node_connection(target.node)
                    version = version_for(conn, ApiKey.HEARTBEAT)
                    response = await client.request(conn, request, version=version)
                    error = Errors.from_code(response.error_code)
                except KafkaError as exc:
                    error = exc.error or Errors.NETWORK_EXCEPTION
                if error is not Errors.NONE:
                    self._deliver(functools.partial(core.handle_heartbeat, target, error, now_ms()))
                    if error is not Errors.REBALANCE_IN_PROGRESS:
                        return  # the generation or the coordinator is gone: a new pacer follows
                    # rebalancing: beat on (Kafka's heartbeat thread does) until the rejoin

    def _deliver(self, apply: Apply) -> None:
        async def done() -> Apply:
            return apply
        self._spawn(done)

    async def _leave_on_poll_timeout(self, target: HeartbeatTarget) -> None:
        logger.warning("consumer poll timeout has expired: leaving group %s (max.poll.interval.ms"
                       " %d exceeded)", target.group_id, self.settings.max_poll_interval_ms)

        def expired() -> None:
            if self.core.generation == target.generation:
                self.core.reset_generation()
        # first the news for the next poll, then the request: its answer may come late
        self._deliver(expired)
        if target.instance_id is None:
            await self._send_leave(target, "consumer poll timeout has expired.")

    async def _send_leave(self, target: HeartbeatTarget, reason: str) -> None:
        client = self._client
        try:
            conn = await client.node_connection(target.node)
            version = version_for(conn, ApiKey.LEAVE_GROUP)
            request = leave_group_request(target.group_id, target.member_id, None, version, reason)
            error = leave_group_error(await client.request(conn, request, version=version))
            if error is not Errors.NONE:
                logger.info("LeaveGroup for %s answered %s", target.group_id, error.name)
        except KafkaError as exc:
            logger.info("LeaveGroup for %s failed: %s", target.group_id, exc)

    # -- leaving -------------------------------------------------------------------------

    async def leave(self, reason: str, timeout_ms: float, *, commit: bool) -> None:
        """Close or unsubscribe: auto-commit, revoke (or lose), LeaveGroup if dynamic."""
        core = self.core
        with trio.move_on_after(timeout_ms / 1000):
            if commit and self._auto_commit and (
                    core.state is MemberState.STABLE or not core.subscribed):
                try:
                    await self.commits.commit(None, timeout_ms)
                except KafkaError as exc:
                    logger.warning("auto-commit at close of group %s failed: %s",
                                   core.group_id, exc)
            lost = core.generation < 0
            owned = core.give_up()
            if owned:
                callback = (self.listener.on_partitions_lost if lost
                            else self.listener.on_partitions_revoked)
                await self._call(callback, owned)
            target = core.leave()
            self._keep_pacer()
            if target is not None:
                await self._send_leave(target, reason)
