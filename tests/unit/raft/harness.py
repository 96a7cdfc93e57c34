"""A deterministic in-memory world for the Raft core (etcd's ``network``, sans I/O).

``Cluster`` runs real ``RaftCore`` objects over a simulated network with a
fixed latency, a fake clock that jumps to the next event, ``MemoryLog`` logs
and an in-memory quorum-state store that survive ``crash``/``restart``. Every
message is encoded and decoded with the wire codec at the version a KRaft
driver uses, so what the core emits is proven to be sendable.

Ready handling follows ``quorum.raft.output``: persist, send ``send``,
flush, send ``send_after_durable``, report the flush. The network can
``cut`` links, ``isolate`` a node, ``drop`` messages matching a predicate and
``heal``. ``crash`` loses a node's unflushed log tail; with
``reset_connections`` its peers see the connection fail (a TCP reset), the
input of the faster failure detection.

The seeded simulator (``tests/sim``) builds on this module.
"""

from __future__ import annotations

import heapq
import itertools
import random
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs

from quorum.log import MemoryLog
from quorum.raft.config import RaftConfig
from quorum.raft.core import RaftCore
from quorum.raft.output import (
    InboundRequest,
    InboundResponse,
    OffsetRange,
    Outbound,
    OutboundRequest,
    Ready,
    RequestMessage,
)
from quorum.raft.states import ElectionState, Leader
from quorum.wire.codec import decode, encode
from quorum.wire.messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    DescribeQuorumRequest,
    DescribeQuorumRequestPartition,
    DescribeQuorumRequestTopic,
    DescribeQuorumResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    VoteRequest,
    VoteResponse,
)
from quorum.wire.records import iter_batches

__all__ = ["CLIENT", "TEST_CONFIG", "Cluster", "Delivery", "Network", "Node"]

CLIENT = -100  # the source id of requests a test sends itself (DescribeQuorum)

# The versions a KRaft driver speaks (Fetch at the KRaft version with topic ids).
WIRE_VERSIONS: dict[type, int] = {
    VoteRequest: 2,
    VoteResponse: 2,
    BeginQuorumEpochRequest: 1,
    BeginQuorumEpochResponse: 1,
    EndQuorumEpochRequest: 1,
    EndQuorumEpochResponse: 1,
    FetchRequest: 17,
    FetchResponse: 17,
    FetchSnapshotRequest: 1,
    FetchSnapshotResponse: 1,
    DescribeQuorumRequest: 2,
    DescribeQuorumResponse: 2,
}

# Short timeouts keep scenario tests readable; ratios as in Kafka's defaults.
TEST_CONFIG = RaftConfig(
    election_timeout_ms=1000,
    fetch_timeout_ms=2000,
    election_backoff_max_ms=1000,
    request_timeout_ms=2000,
    retry_backoff_ms=20,
    append_linger_ms=25,
    fetch_max_wait_ms=500,
)


def over_the_wire(message: Any) -> Any:
    version = WIRE_VERSIONS[type(message)]
    return decode(type(message), version, encode(message, version))


@attrs.define
class Delivery:
    at_ms: int
    seq: int
    source: int
    destination: int
    envelope: InboundRequest | InboundResponse

    def __lt__(self, other: Delivery) -> bool:
        return (self.at_ms, self.seq) < (other.at_ms, other.seq)


class Network:
    """Directed links that can be cut, plus drop rules; everything else arrives."""

    def __init__(self) -> None:
        self.cut_links: set[tuple[int, int]] = set()
        self.drop_rules: list[Callable[[Delivery], bool]] = []

    def cut(self, a: int, b: int) -> None:
        self.cut_links |= {(a, b), (b, a)}

    def cut_one_way(self, source: int, destination: int) -> None:
        self.cut_links.add((source, destination))

    def isolate(self, node: int, others: Iterable[int]) -> None:
        for other in others:
            if other != node:
                self.cut(node, other)

    def drop(self, rule: Callable[[Delivery], bool]) -> None:
        self.drop_rules.append(rule)

    def heal(self) -> None:
        self.cut_links.clear()
        self.drop_rules.clear()

    def allows(self, delivery: Delivery) -> bool:
        if (delivery.source, delivery.destination) in self.cut_links:
            return False
        return not any(rule(delivery) for rule in self.drop_rules)


@attrs.define
class Node:
    node_id: int
    log: MemoryLog
    rng: random.Random
    stored: ElectionState | None = None
    core: RaftCore | None = None
    deadline_ms: int | None = None
    readies: list[Ready] = attrs.field(factory=list)

    @property
    def alive(self) -> bool:
        return self.core is not None

    @property
    def raft(self) -> RaftCore:
        assert self.core is not None, f"node {self.node_id} is down"
        return self.core


class Cluster:
    def __init__(
        self,
        voters: Sequence[int],
        observers: Sequence[int] = (),
        *,
        config: RaftConfig = TEST_CONFIG,
        seed: int = 0,
        latency_ms: int = 1,
        cluster_id: str = "pykraft-test-cluster",
        start: bool = True,
    ) -> None:
        assert latency_ms >= 1, "a zero latency could loop forever at one instant"
        self.voters = tuple(voters)
        self.config = config
        self.cluster_id = cluster_id
        self.latency_ms = latency_ms
        self.now_ms = 0
        self.network = Network()
        self.nodes = {
            n: Node(n, MemoryLog(), random.Random(seed * 7919 + n))
            for n in (*voters, *observers)
        }
        self._queue: list[Delivery] = []
        self._seq = itertools.count()
        self._client_ids = itertools.count(1)
        self.client_responses: dict[int, Any] = {}
        self.delivered: list[Delivery] = []
        self.invariant_checks: list[Callable[[Cluster], None]] = [check_one_leader_per_epoch]
        # a fault hook: True kills the node between sending ``send`` and making it durable
        self.crash_before_durable: Callable[[Node, Ready], bool] = lambda node, ready: False
        if start:
            for node_id in self.nodes:
                self.start(node_id)

    # -- nodes -------------------------------------------------------------------------

    def start(self, node_id: int) -> None:
        node = self.nodes[node_id]
        assert not node.alive
        node.core = RaftCore(
            node_id=node_id,
            voters=self.voters,
            log=node.log,
            cluster_id=self.cluster_id,
            rng=node.rng,
            now_ms=self.now_ms,
            config=self.config,
            election_state=node.stored,
        )
        self.apply(node, node.raft.poll(self.now_ms))

    def crash(self, node_id: int, *, reset_connections: bool = False) -> None:
        """Kill the process: unflushed log data is lost, persisted state survives."""
        node = self.nodes[node_id]
        node.core = None
        node.deadline_ms = None
        node.log.crash()
        if reset_connections:
            for other in self.alive_nodes():
                self.apply(other, other.raft.connection_failed(node_id, self.now_ms))

    def restart(self, node_id: int) -> None:
        self.start(node_id)

    def alive_nodes(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.alive]

    def core(self, node_id: int) -> RaftCore:
        return self.nodes[node_id].raft

    def leader(self) -> RaftCore | None:
        """The live leader of the highest epoch, if any."""
        leaders = [n.raft for n in self.alive_nodes() if isinstance(n.raft.state, Leader)]
        return max(leaders, key=lambda c: c.epoch) if leaders else None

    # -- inputs --------------------------------------------------------------------------

    def propose(self, node_id: int, payloads: Sequence[bytes]) -> OffsetRange:
        node = self.nodes[node_id]
        ready = node.raft.propose(payloads, self.now_ms)
        self.apply(node, ready)
        assert ready.accepted is not None
        return ready.accepted

    def send_client_request(self, node_id: int, message: RequestMessage) -> int:
        handle = next(self._client_ids)
        self._enqueue(CLIENT, node_id, InboundRequest((CLIENT, handle), over_the_wire(message)))
        return handle

    def describe_quorum(self, node_id: int) -> DescribeQuorumResponse:
        request = DescribeQuorumRequest(
            topics=(
                DescribeQuorumRequestTopic(
                    topic_name="__cluster_metadata",
                    partitions=(DescribeQuorumRequestPartition(partition_index=0),),
                ),
            )
        )
        handle = self.send_client_request(node_id, request)
        assert self.run_until(lambda: handle in self.client_responses, 100)
        response = self.client_responses.pop(handle)
        assert isinstance(response, DescribeQuorumResponse)
        return response

    # -- the Ready contract --------------------------------------------------------------

    def apply(self, node: Node, ready: Ready) -> None:
        node.readies.append(ready)
        self._send(node, ready.send)
        if ready.needs_durability and self.crash_before_durable(node, ready):
            # killed after sending what may go at once, before fsync: the new
            # election state and the unflushed log tail are lost
            self.crash(node.node_id)
            return
        if ready.persist is not None:
            node.stored = ready.persist  # write temp file, fsync, rename
        if ready.needs_durability:
            flushed = node.log.flush()
            self._send(node, ready.send_after_durable)
            if ready.flush_log and node.core is not None:
                self.apply(node, node.raft.flushed(flushed, self.now_ms))
                return
        node.deadline_ms = ready.next_deadline_ms

    def _send(self, node: Node, outbound: Iterable[Outbound]) -> None:
        for message in outbound:
            if isinstance(message, OutboundRequest):
                handle = (node.node_id, message.request_id)
                envelope: InboundRequest | InboundResponse = InboundRequest(
                    handle, over_the_wire(message.message)
                )
                self._enqueue(node.node_id, message.destination, envelope)
                continue
            origin, request_id = message.reply_to  # type: ignore[misc]
            response = over_the_wire(message.message)
            if origin == CLIENT:
                self.client_responses[request_id] = response
            else:
                self._enqueue(
                    node.node_id, origin, InboundResponse(node.node_id, request_id, response)
                )

    def _enqueue(
        self, source: int, destination: int, envelope: InboundRequest | InboundResponse
    ) -> None:
        delivery = Delivery(
            self.now_ms + self.latency_ms, next(self._seq), source, destination, envelope
        )
        heapq.heappush(self._queue, delivery)

    # -- time ------------------------------------------------------------------------------

    def next_event_ms(self) -> int | None:
        times = [n.deadline_ms for n in self.alive_nodes() if n.deadline_ms is not None]
        if self._queue:
            times.append(self._queue[0].at_ms)
        return min(times) if times else None

    def step(self) -> bool:
        """Advance to the next event and process everything due then; False if idle."""
        when = self.next_event_ms()
        if when is None:
            return False
        self.now_ms = max(self.now_ms, when)
        while self._queue and self._queue[0].at_ms <= self.now_ms:
            self._deliver(heapq.heappop(self._queue))
        for _ in range(1000):
            due = [
                n
                for n in self.alive_nodes()
                if n.deadline_ms is not None and n.deadline_ms <= self.now_ms
            ]
            if not due:
                break
            for node in due:
                self.apply(node, node.raft.poll(self.now_ms))
        else:
            raise AssertionError(f"a node keeps asking to be polled at {self.now_ms} ms")
        for check in self.invariant_checks:
            check(self)
        return True

    def _deliver(self, delivery: Delivery) -> None:
        node = self.nodes.get(delivery.destination)
        if node is None or not node.alive or not self.network.allows(delivery):
            return
        self.delivered.append(delivery)
        self.apply(node, node.raft.handle(delivery.envelope, self.now_ms))

    def run_for(self, duration_ms: int) -> None:
        end = self.now_ms + duration_ms
        while (when := self.next_event_ms()) is not None and when <= end:
            self.step()
        self.now_ms = max(self.now_ms, end)

    def run_until(self, condition: Callable[[], bool], timeout_ms: int = 30_000) -> bool:
        end = self.now_ms + timeout_ms
        while not condition():
            when = self.next_event_ms()
            if when is None or when > end:
                self.now_ms = max(self.now_ms, end)
                return condition()
            self.step()
        return True

    # -- observations --------------------------------------------------------------------

    def elect(self, timeout_ms: int = 30_000) -> RaftCore:
        """Run until one leader has a high watermark that every live voter follows."""
        assert self.run_until(self._settled, timeout_ms), "no stable leader emerged"
        leader = self.leader()
        assert leader is not None
        return leader

    def _settled(self) -> bool:
        leader = self.leader()
        if leader is None or leader.high_watermark is None:
            return False
        return all(
            n.raft.leader_id == leader.node_id and n.raft.epoch == leader.epoch
            for n in self.alive_nodes()
            if n.node_id in self.voters
        )

    def committed_values(self, node_id: int) -> list[bytes | None]:
        """Values of the data records below the node's high watermark, in order."""
        node = self.nodes[node_id]
        hw = node.raft.high_watermark if node.alive else None
        if not hw:
            return []
        return data_values(node.log, hw)


def data_values(log: MemoryLog, end_offset: int) -> list[bytes | None]:
    read = log.read(0, 1 << 30, max_offset=end_offset)
    return [
        record.value
        for batch in iter_batches(read.records)
        if not batch.header.is_control
        for record in batch.records
    ]


def check_one_leader_per_epoch(cluster: Cluster) -> None:
    """Across every persisted election state, an epoch names at most one leader."""
    leaders: dict[int, int] = {}
    for node in cluster.nodes.values():
        stored = node.stored
        if stored is None or stored.leader_id is None:
            continue
        other = leaders.setdefault(stored.epoch, stored.leader_id)
        assert other == stored.leader_id, (
            f"epoch {stored.epoch} has two leaders: {other} and {stored.leader_id}"
        )


def check_committed_prefixes(cluster: Cluster) -> None:
    """Committed records are the same on every live node that has them."""
    seen = [
        data_values(node.log, hw)
        for node in cluster.alive_nodes()
        if (hw := node.raft.high_watermark)
    ]
    for a in seen:
        for b in seen:
            common = min(len(a), len(b))
            assert a[:common] == b[:common], f"committed records differ: {a} vs {b}"


class CommittedHistory:
    """An invariant check: nothing once committed anywhere is ever lost or changed."""

    def __init__(self) -> None:
        self.longest: list[bytes | None] = []

    def __call__(self, cluster: Cluster) -> None:
        for node in cluster.alive_nodes():
            hw = node.raft.high_watermark
            if not hw:
                continue
            values = data_values(node.log, hw)
            common = min(len(values), len(self.longest))
            assert values[:common] == self.longest[:common], (
                f"node {node.node_id} commits {values[:common]} where {self.longest[:common]} "
                "was committed before"
            )
            if len(values) > len(self.longest):
                self.longest = values
