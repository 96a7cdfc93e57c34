"""A seeded world for the group coordinator: clients, a log with delay, failovers.

The production ``GroupCoordinator`` runs unchanged.  Around it: consumers
that behave like Kafka's (KIP-394 join, leader assigns, sync, heartbeat,
commit, rejoin on REBALANCE_IN_PROGRESS, reset on UNKNOWN_MEMBER_ID or
ILLEGAL_GENERATION), some with a ``group.instance.id``, a simple consumer
committing with generation -1; a network that delays requests and answers;
an ``__consumer_offsets`` partition whose appends commit after a delay (or
fail); and faults: consumers that crash and restart, and coordinator
failovers, where a new coordinator instance loads the same log (the
uncommitted tail kept or cut, as a new leader's log may be).
"""

from __future__ import annotations

import heapq
import itertools
import random
from collections.abc import Callable
from functools import partial
from typing import Any

import attrs

from broker.group import CoordinatorOutput, GroupCoordinator, GroupCoordinatorConfig
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
)

from .checks import Checks

GROUP = "sim-group"
SOLO = "sim-solo"
TOPIC = "t"
SESSION_MS = 3_000
HEARTBEAT_MS = 1_000
REBALANCE_MS = 5_000
RETRY_MS = 200
RETRIABLE = {
    Errors.NOT_COORDINATOR, Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.COORDINATOR_NOT_AVAILABLE,
}


@attrs.define
class Client:
    """One consumer (or, with ``simple``, an assign()-only committer)."""

    name: str
    instance_id: str | None = None
    simple: bool = False
    alive: bool = True
    member_id: str = ""
    generation: int = -1
    stable: bool = False
    epoch: int = 0  # bumped on crash: stale callbacks of an older life are dropped
    waiting: int | None = None  # token of the request in flight
    waiting_since: int = 0
    next_offset: int = 0
    assignment: bytes = b""


@attrs.define
class World:
    seed: int
    rng: random.Random
    config: GroupCoordinatorConfig
    checks: Checks
    now: int = 0
    coordinator: GroupCoordinator | None = None
    incarnation: int = 0
    loaded: bool = False
    clients: list[Client] = attrs.field(factory=list)
    log: list[tuple[bytes, bytes | None, int]] = attrs.field(factory=list)  # key, value, append id
    committed: int = 0  # log entries below this index are committed
    # (incarnation, append id) -> its span of the log
    inflight: dict[tuple[int, int], tuple[int, int]] = attrs.field(factory=dict)
    queue: list[tuple[int, int, Callable[[], None]]] = attrs.field(factory=list)
    tokens: dict[int, tuple[Client, int, str, int, Any]] = attrs.field(factory=dict)
    seq: itertools.count[int] = attrs.field(factory=itertools.count)
    token_ids: itertools.count[int] = attrs.field(factory=lambda: itertools.count(1))
    faults: bool = True

    # -- the event loop ------------------------------------------------------

    def at(self, time_ms: int, action: Callable[[], None]) -> None:
        heapq.heappush(self.queue, (time_ms, next(self.seq), action))

    def run_until(self, end_ms: int) -> None:
        while self.queue and self.queue[0][0] <= end_ms:
            time_ms, _, action = heapq.heappop(self.queue)
            self.now = max(self.now, time_ms)
            action()
            self.checks.after_event(self)
        self.now = end_ms

    def delay(self) -> int:
        return self.rng.randint(1, 30)

    # -- the coordinator and its shell -----------------------------------------

    def start_coordinator(self) -> None:
        """A new coordinator instance takes the partition over and loads the log."""
        self.incarnation += 1
        self.coordinator = GroupCoordinator(self.config, rng=random.Random(self.rng.getrandbits(32)))
        self.loaded = False
        incarnation = self.incarnation
        self.take(self.coordinator.begin_load(0, now_ms=self.now), incarnation)

        def finish() -> None:
            if incarnation != self.incarnation:
                return
            assert self.coordinator is not None
            records = [(k, v) for k, v, _ in self.log]
            self.take(self.coordinator.load_records(0, records, now_ms=self.now), incarnation)
            self.take(self.coordinator.finish_load(0, now_ms=self.now), incarnation)
            self.loaded = True
            self.checks.after_load(self)

        self.at(self.now + self.rng.randint(0, 300), finish)

    def failover(self) -> None:
        """The offsets partition moves: the uncommitted tail survives or is cut."""
        if self.rng.random() < 0.5:
            del self.log[self.committed:]
        self.committed = len(self.log)  # the new leader's log is the truth now
        self.inflight.clear()
        self.tokens.clear()  # requests parked in the old coordinator are never answered
        for client in self.clients:
            # their connection to the old coordinator breaks: a retriable error soon
            self.at(self.now + self.delay(), partial(self.disconnected, client, client.waiting))
        self.start_coordinator()

    def take(self, out: CoordinatorOutput, incarnation: int) -> None:
        if incarnation != self.incarnation:
            return
        for answer in out.answers:
            token = answer.token
            assert isinstance(token, int)
            info = self.tokens.pop(token)  # KeyError: an unknown or repeated token
            self.checks.on_answer(token, answer.response)
            self.at(self.now + self.delay(), partial(self.deliver, info, answer.response))
        for append in out.appends:
            start = len(self.log)
            self.log += [(r.key, r.value, append.append_id) for r in append.records]
            self.inflight[(incarnation, append.append_id)] = (start, len(self.log))
            self.checks.on_append(append.append_id, start, len(self.log))
            settle = partial(self.settle, incarnation, append.append_id)
            self.at(self.now + self.rng.randint(1, 50), settle)
        if out.next_deadline_ms is not None:
            self.at(max(out.next_deadline_ms, self.now), lambda: self.poll(incarnation))

    def poll(self, incarnation: int) -> None:
        if incarnation == self.incarnation and self.coordinator is not None:
            self.take(self.coordinator.poll(self.now), incarnation)

    def settle(self, incarnation: int, append_id: int) -> None:
        entry = self.inflight.get((incarnation, append_id))
        if entry is None or self.coordinator is None or incarnation != self.incarnation:
            return  # cut by a failover
        start, end = entry
        if start != self.committed:
            # the high watermark passes appends in log order
            self.at(self.now + 1, lambda: self.settle(incarnation, append_id))
            return
        del self.inflight[(incarnation, append_id)]
        if self.faults and self.rng.random() < 0.02:
            # the append failed (NOT_ENOUGH_REPLICAS): it and everything after it leave the log
            del self.log[start:]
            later = sorted((s, a) for (i, a), (s, _) in self.inflight.items() if s >= start)
            for _, other in later:
                del self.inflight[(incarnation, other)]
            for failed in [append_id] + [a for _, a in later]:
                out = self.coordinator.append_failed(failed, Errors.NOT_ENOUGH_REPLICAS, now_ms=self.now)
                self.take(out, incarnation)
            return
        self.committed = end
        self.take(self.coordinator.append_committed(append_id, now_ms=self.now), incarnation)

    # -- clients -----------------------------------------------------------------

    def send(self, client: Client, kind: str, request: object, version: int, extra: Any = None) -> None:
        token = next(self.token_ids)
        client.waiting, client.waiting_since = token, self.now
        epoch, incarnation = client.epoch, self.incarnation

        def arrive() -> None:
            if incarnation != self.incarnation or self.coordinator is None:
                return  # sent to a coordinator that is gone: the client times out
            self.tokens[token] = (client, epoch, kind, version, extra)
            self.checks.on_request(token, kind, request, version, client, incarnation)
            out = self.coordinator.handle(request, version=version, token=token, now_ms=self.now,
                                          client_id=client.name, client_host="/10.0.0.1")
            self.take(out, incarnation)
            self.checks.current_token = None

        self.at(self.now + self.delay(), arrive)
        timeout = REBALANCE_MS + 5_000 if kind == "join" else 10_000
        self.at(self.now + timeout, lambda: self.timed_out(client, token))

    def later(self, client: Client, delay_ms: int, action: Callable[[], None]) -> None:
        """Run ``action`` after ``delay_ms`` unless the client crashed meanwhile."""
        epoch = client.epoch

        def run() -> None:
            if epoch == client.epoch and client.alive:
                action()

        self.at(self.now + delay_ms, run)

    def disconnected(self, client: Client, token: int | None) -> None:
        if token is not None and client.waiting == token and client.alive:
            client.waiting = None
            self.after_error(client, Errors.NOT_COORDINATOR)

    def timed_out(self, client: Client, token: int) -> None:
        if client.waiting == token and client.alive:
            client.waiting = None
            self.rejoin(client, keep_id=True)

    def deliver(self, info: tuple[Client, int, str, int, Any], response: Any) -> None:
        client, epoch, kind, version, extra = info
        if epoch != client.epoch or not client.alive:
            return
        client.waiting = None
        getattr(self, f"on_{kind}")(client, response, version, extra)

    def rejoin(self, client: Client, *, keep_id: bool) -> None:
        if not client.alive:
            return
        client.stable = False
        if client.simple:
            self.later(client, HEARTBEAT_MS, lambda: self.commit(client))
            return
        if not keep_id:
            client.member_id, client.generation = "", -1
        version = self.rng.choice((4, 5, 7, 9))
        request = JoinGroupRequest(
            group_id=GROUP, session_timeout_ms=SESSION_MS, rebalance_timeout_ms=REBALANCE_MS,
            member_id=client.member_id, group_instance_id=client.instance_id,
            protocol_type="consumer",
            protocols=(JoinGroupRequestProtocol(name="range", metadata=b"\x00\x00\x00\x00\x00\x00"),),
        )
        self.send(client, "join", request, version)

    def on_join(self, client: Client, r: Any, version: int, extra: Any) -> None:
        if r.error_code == Errors.MEMBER_ID_REQUIRED:
            client.member_id = r.member_id
            self.rejoin(client, keep_id=True)
        elif r.error_code == Errors.NONE:
            client.member_id, client.generation = r.member_id, r.generation_id
            assignments: tuple[SyncGroupRequestAssignment, ...] = ()
            if r.leader == r.member_id:
                # the leader's assignment names generation and recipient, so checks can tell
                assignments = tuple(
                    SyncGroupRequestAssignment(
                        member_id=m.member_id,
                        assignment=f"{r.generation_id}:{m.group_instance_id or m.member_id}".encode(),
                    )
                    for m in r.members
                )
            request = SyncGroupRequest(
                group_id=GROUP, generation_id=r.generation_id, member_id=r.member_id,
                group_instance_id=client.instance_id, assignments=assignments,
            )
            self.send(client, "sync", request, self.rng.choice((3, 4, 5)), r.generation_id)
        else:
            self.after_error(client, r.error_code)

    def on_sync(self, client: Client, r: Any, version: int, generation: int) -> None:
        if r.error_code == Errors.NONE:
            client.stable, client.assignment = True, bytes(r.assignment)
            self.at(self.now + HEARTBEAT_MS, partial(self.beat, client, client.epoch))
        else:
            self.after_error(client, r.error_code)

    def after_error(self, client: Client, error: int) -> None:
        if error in RETRIABLE or error == Errors.REBALANCE_IN_PROGRESS:
            self.later(client, RETRY_MS, lambda: self.rejoin(client, keep_id=True))
        elif error == Errors.FENCED_INSTANCE_ID:
            client.alive = False  # fatal for a static consumer, as in Kafka's client
        else:
            self.later(client, RETRY_MS, lambda: self.rejoin(client, keep_id=False))

    def beat(self, client: Client, epoch: int) -> None:
        if epoch != client.epoch or not client.alive or not client.stable or client.waiting:
            return
        if self.rng.random() < 0.3:
            self.commit(client)
            return
        request = HeartbeatRequest(group_id=GROUP, generation_id=client.generation,
                                   member_id=client.member_id, group_instance_id=client.instance_id)
        self.send(client, "heartbeat", request, self.rng.choice((0, 3, 4)))

    def on_heartbeat(self, client: Client, r: Any, version: int, extra: Any) -> None:
        if r.error_code == Errors.NONE:
            self.at(self.now + HEARTBEAT_MS, partial(self.beat, client, client.epoch))
        else:
            self.after_error(client, r.error_code)

    def commit(self, client: Client) -> None:
        if not client.alive or client.waiting:
            return
        client.next_offset += 1
        partition = int(client.name.rsplit("-", 1)[1]) % 4
        request = OffsetCommitRequest(
            group_id=SOLO if client.simple else GROUP,
            generation_id_or_member_epoch=-1 if client.simple else client.generation,
            member_id="" if client.simple else client.member_id,
            group_instance_id=None if client.simple else client.instance_id,
            topics=(OffsetCommitRequestTopic(name=TOPIC, partitions=(OffsetCommitRequestPartition(
                partition_index=partition, committed_offset=client.next_offset,
            ),)),),
        )
        self.send(client, "commit", request, self.rng.choice((2, 5, 8, 9)))

    def on_commit(self, client: Client, r: Any, version: int, extra: Any) -> None:
        error = r.topics[0].partitions[0].error_code
        if client.simple:
            self.later(client, HEARTBEAT_MS, lambda: self.commit(client))
        elif error == Errors.NONE:
            self.at(self.now + HEARTBEAT_MS, partial(self.beat, client, client.epoch))
        else:
            self.after_error(client, error)

    def crash(self, client: Client) -> None:
        client.alive, client.stable, client.waiting = False, False, None
        client.epoch += 1

    def restart(self, client: Client) -> None:
        client.alive = True
        client.epoch += 1
        self.rejoin(client, keep_id=False)
