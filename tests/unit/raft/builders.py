"""Messages and single cores for tests that drive one ``RaftCore`` by hand."""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from typing import Any, TypeVar

from quorum.log import MemoryLog, OffsetAndEpoch, ReplicatedLog
from quorum.raft import adapters, snapshot_adapters
from quorum.raft.config import RaftConfig
from quorum.raft.core import RaftCore
from quorum.raft.output import (
    InboundRequest,
    InboundResponse,
    OutboundRequest,
    OutboundResponse,
    Ready,
)
from quorum.raft.rpc import (
    BeginEpochAsk,
    EndEpochAsk,
    EpochAnswer,
    FetchAnswer,
    FetchAsk,
    FetchSnapshotAnswer,
    FetchSnapshotAsk,
    VoteAnswer,
    VoteAsk,
)
from quorum.raft.states import ElectionState
from quorum.wire.records import build_batch_from_values

from .harness import TEST_CONFIG, over_the_wire

__all__ = [
    "begin_epoch_request",
    "end_epoch_request",
    "fetch_request",
    "fetch_snapshot_request",
    "log_with",
    "new_core",
    "requests_in",
    "response_to",
    "vote_request",
]

T = TypeVar("T")
_handles = itertools.count(1)


def new_core(
    node_id: int = 1,
    voters: Sequence[int] = (1, 2, 3),
    *,
    log: ReplicatedLog | None = None,
    stored: ElectionState | None = None,
    now_ms: int = 0,
    config: RaftConfig = TEST_CONFIG,
    seed: int = 0,
    cluster_id: str = "pykraft-test-cluster",
) -> RaftCore:
    return RaftCore(
        node_id=node_id,
        voters=voters,
        log=log if log is not None else MemoryLog(),
        cluster_id=cluster_id,
        rng=random.Random(seed),
        now_ms=now_ms,
        config=config,
        election_state=stored,
    )


def log_with(epochs: Sequence[int]) -> MemoryLog:
    """A log holding one single-record batch per entry of ``epochs``."""
    log = MemoryLog()
    for epoch in epochs:
        log.append(build_batch_from_values([b"v"]), epoch=epoch)
    log.flush()
    return log


def _request(message: Any) -> InboundRequest:
    return InboundRequest(("test", next(_handles)), over_the_wire(message))


def vote_request(
    candidate: int,
    epoch: int,
    *,
    last_epoch: int = 0,
    last_offset: int = 0,
    pre_vote: bool = False,
    voter_id: int = -1,
    cluster_id: str | None = None,
) -> InboundRequest:
    ask = VoteAsk(
        cluster_id=cluster_id,
        voter_id=voter_id,
        replica_id=candidate,
        replica_epoch=epoch,
        last_offset_epoch=last_epoch,
        last_offset=last_offset,
        pre_vote=pre_vote,
    )
    return _request(adapters.vote_request(ask))


def begin_epoch_request(
    leader: int, epoch: int, *, voter_id: int = -1, cluster_id: str | None = None
) -> InboundRequest:
    ask = BeginEpochAsk(cluster_id=cluster_id, voter_id=voter_id, leader_id=leader, leader_epoch=epoch)
    return _request(adapters.begin_epoch_request(ask))


def end_epoch_request(
    leader: int, epoch: int, successors: Sequence[int] = (), *, cluster_id: str | None = None
) -> InboundRequest:
    ask = EndEpochAsk(
        cluster_id=cluster_id,
        leader_id=leader,
        leader_epoch=epoch,
        preferred_successors=tuple(successors),
    )
    return _request(adapters.end_epoch_request(ask))


def fetch_request(
    replica: int,
    epoch: int,
    *,
    offset: int = 0,
    last_epoch: int = 0,
    max_wait_ms: int = 0,
    cluster_id: str | None = None,
) -> InboundRequest:
    ask = FetchAsk(
        cluster_id=cluster_id,
        replica_id=replica,
        max_wait_ms=max_wait_ms,
        max_bytes=1 << 20,
        current_leader_epoch=epoch,
        fetch_offset=offset,
        last_fetched_epoch=last_epoch,
    )
    return _request(adapters.fetch_request(ask))


def fetch_snapshot_request(
    replica: int,
    epoch: int,
    snapshot_id: OffsetAndEpoch,
    *,
    position: int = 0,
    max_bytes: int = 1 << 20,
    cluster_id: str | None = None,
    topic: str = adapters.METADATA_TOPIC,
    partition: int = adapters.METADATA_PARTITION,
) -> InboundRequest:
    ask = FetchSnapshotAsk(
        cluster_id=cluster_id,
        replica_id=replica,
        max_bytes=max_bytes,
        topic_name=topic,
        partition=partition,
        current_leader_epoch=epoch,
        snapshot_id=snapshot_id,
        position=position,
    )
    return _request(snapshot_adapters.fetch_snapshot_request(ask))


def all_sent(ready: Ready) -> list[OutboundRequest | OutboundResponse]:
    return [*ready.send, *ready.send_after_durable]


def response_to(ready: Ready, request: InboundRequest) -> Any:
    """The parsed view of the core's answer to ``request`` (None if it was parked)."""
    for message in all_sent(ready):
        if isinstance(message, OutboundResponse) and message.reply_to == request.handle:
            wire = over_the_wire(message.message)
            name = type(wire).__name__
            if name == "VoteResponse":
                return adapters.parse_vote_response(wire)
            if name in ("BeginQuorumEpochResponse", "EndQuorumEpochResponse"):
                return adapters.parse_epoch_response(wire)
            if name == "FetchResponse":
                return adapters.parse_fetch_response(wire)
            if name == "FetchSnapshotResponse":
                return snapshot_adapters.parse_fetch_snapshot_response(wire)
            return wire
    return None


def requests_in(ready: Ready, kind: type[T]) -> list[tuple[int, int, T]]:
    """(destination, request id, message) of each outbound request of ``kind``."""
    return [
        (m.destination, m.request_id, m.message)
        for m in all_sent(ready)
        if isinstance(m, OutboundRequest) and isinstance(m.message, kind)
    ]


def reply(
    source: int,
    request_id: int,
    answer: VoteAnswer | EpochAnswer | FetchAnswer | FetchSnapshotAnswer,
    kind: str,
) -> InboundResponse:
    builders = {
        "vote": adapters.vote_response,
        "begin": adapters.begin_epoch_response,
        "end": adapters.end_epoch_response,
        "fetch": adapters.fetch_response,
        "fetch_snapshot": snapshot_adapters.fetch_snapshot_response,
    }
    message = builders[kind](answer)  # type: ignore[operator]
    return InboundResponse(source, request_id, over_the_wire(message))


def make_leader(core: RaftCore, now_ms: int = 10_000) -> Ready:
    """Drive a fresh voter of three through pre-vote and vote to leadership; the last Ready."""
    from quorum.wire.messages import VoteRequest

    ready = core.poll(now_ms)
    for _ in range(2):  # one granted pre-vote, then one granted vote: a majority of three
        asks = requests_in(ready, VoteRequest)
        assert asks, f"node {core.node_id} asked for no votes ({core.role})"
        destination, request_id, _ = asks[0]
        answer = VoteAnswer(leader_epoch=core.epoch, vote_granted=True)
        ready = core.handle(reply(destination, request_id, answer, "vote"), now_ms)
    assert core.is_leader, core.role
    return ready
