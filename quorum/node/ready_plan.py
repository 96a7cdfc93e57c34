"""``ReadyPlan``: the decisions of the task that owns a Raft core, without I/O.

The Ready contract (``quorum.raft.output``) leaves the driver choices that
matter for safety and speed: which fsyncs run where, what may be sent before
the disk catches up, what a leader may serve while its own log flush runs
beside it, and which offset it reports as flushed. Those choices live here,
as generators of effects, so that the trio driver (``quorum.node.driver``)
and the deterministic simulator (``tests/sim``) run the same code: each
executor performs an effect (a send, a write, a flush, with real or
simulated time) and sends back its result.

For each Ready (``apply``):

1. ``send`` goes out at once (a leader serves fetches before its own flush);
2. a leader's own log flush that nothing in the Ready waits on runs beside
   the core (``StartFlushBeside``); its offset counts toward the high
   watermark only once ``flush_beside_ended`` reports what it made durable;
3. otherwise, when the Ready needs durability: any flush beside ends first
   (``AwaitFlushBeside``), the quorum-state file is replaced durably
   (``Persist``), the log is flushed (``Flush``), and only then
   ``send_after_durable`` goes out (a vote, a new epoch, a fetch that tells
   the leader what this node has: each must survive a crash);
4. the state machine and the pending appends see the Ready (``Observe``);
5. a waited flush is reported to the core (``flushed``) and the Ready that
   follows is handled the same way.

Between inputs, ``safe_beside_a_flush`` says whether an input may be handled
while a leader's flush runs beside the core. Where the waited fsyncs run is
the node's ``FsyncPlacement``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Generator
from typing import Any, TypeAlias

import attrs

from quorum.log import ReplicatedLog
from quorum.node.inputs import Input
from quorum.raft import ElectionState, InboundResponse, Outbound, RaftCore, Ready
from quorum.wire.messages import FetchResponse, FetchSnapshotResponse

__all__ = [
    "AwaitFlushBeside",
    "Effect",
    "Effects",
    "Flush",
    "FsyncPlacement",
    "Observe",
    "Persist",
    "ReadyPlan",
    "Send",
    "StartFlushBeside",
    "safe_beside_a_flush",
]


class FsyncPlacement(enum.Enum):
    """Which thread runs the fsyncs the core's task waits for.

    A worker thread keeps the trio thread serving meanwhile, but costs two
    thread wake-ups per sync (250-500 us on a busy 2-core machine, measured):
    on a follower that is most of a commit's critical path, and a follower has
    nothing urgent to serve while it syncs. A broker's trio thread will serve
    clients, so brokers keep the worker thread. A leader's own flush always runs
    beside the core in a worker thread unless everything is ``INLINE``.
    """

    WORKER_THREAD = "worker-thread"
    INLINE_WHEN_FOLLOWING = "inline-when-following"
    INLINE = "inline"  # benchmarks only: a leader's sync stalls its fetch serving


@attrs.frozen
class Send:
    messages: tuple[Outbound, ...]


@attrs.frozen
class Persist:
    """Replace the quorum-state file durably (the executor waits)."""

    state: ElectionState
    on_thread: bool


@attrs.frozen
class Flush:
    """Flush the log and wait; the executor sends back the flushed offset."""

    on_thread: bool


@attrs.frozen
class StartFlushBeside:
    """Start a flush of the log that runs beside the core; report it with
    ``ReadyPlan.flush_beside_ended`` between two inputs."""


@attrs.frozen
class AwaitFlushBeside:
    """Wait until the flush running beside the core has ended (it is reported later)."""


@attrs.frozen
class Observe:
    """Hand the Ready to the state machine and the pending appends."""

    ready: Ready


Effect: TypeAlias = Send | Persist | Flush | StartFlushBeside | AwaitFlushBeside | Observe
# a plan step: yields effects, receives each one's result (a flushed offset, or None)
Effects: TypeAlias = Generator[Effect, Any, None]


class ReadyPlan:
    def __init__(
        self,
        core: RaftCore,
        log: ReplicatedLog,
        *,
        now_ms: Callable[[], int],
        fsync: FsyncPlacement = FsyncPlacement.WORKER_THREAD,
    ) -> None:
        self.core = core
        self._log = log
        self._now_ms = now_ms
        self.fsync = fsync
        self.flush_beside_running = False
        # appends came after the running flush started: another follows once it is reported
        self._flush_again = False
        self.deadline_ms: int | None = None  # when the core wants to be polled

    def apply(self, ready: Ready) -> Effects:
        """Everything one Ready asks for, in the contract's order (the module docstring)."""
        log = self._log
        while True:
            if ready.send:
                yield Send(ready.send)
            waits_on_disk = ready.persist is not None or bool(ready.send_after_durable)
            leading = ready.role == "Leader"
            flushed = log.flushed_offset
            # a leader's own flush that nothing here waits on: beside the core, reported later
            beside = ready.flush_log and not waits_on_disk and leading and (
                self.fsync is not FsyncPlacement.INLINE
            )
            if beside:
                if flushed < log.log_end_offset:
                    yield from self._flush_beside()
            elif waits_on_disk or ready.flush_log:
                on_thread = self._on_thread(leading)
                if self.flush_beside_running:
                    yield AwaitFlushBeside()
                if ready.persist is not None:
                    yield Persist(ready.persist, on_thread)
                if (ready.flush_log or ready.send_after_durable) and (
                    flushed < log.log_end_offset
                ):
                    flushed = yield Flush(on_thread)
                if ready.send_after_durable:
                    yield Send(ready.send_after_durable)
            yield Observe(ready)
            self.deadline_ms = ready.next_deadline_ms
            if beside or not ready.flush_log:
                return
            ready = self.core.flushed(flushed, self._now_ms())

    def flush_beside_ended(self, flushed: int) -> Effects:
        """Tell the core what the flush beside it made durable (between inputs only)."""
        assert self.flush_beside_running, "no flush runs beside the core"
        self.flush_beside_running = False
        ready = self.core.flushed(flushed, self._now_ms())
        log = self._log
        if self._flush_again and log.flushed_offset < log.log_end_offset:
            ready = attrs.evolve(ready, flush_log=True)
        yield from self.apply(ready)

    def _flush_beside(self) -> Effects:
        if self.flush_beside_running:
            self._flush_again = True
            return
        self.flush_beside_running = True
        self._flush_again = False
        yield StartFlushBeside()

    def _on_thread(self, leading: bool) -> bool:
        placement = self.fsync
        return placement is FsyncPlacement.WORKER_THREAD or (
            placement is FsyncPlacement.INLINE_WHEN_FOLLOWING and leading
        )


def safe_beside_a_flush(item: Input | None) -> bool:
    """Whether a leader may handle ``item`` (None: its timers) while its log flush runs.

    Everything but the answers to a fetch: a leader's steps append or read,
    never truncate; a step that ends the leadership (a Vote or
    BeginQuorumEpoch of a newer epoch) comes with a Ready to persist, and
    ``apply`` waits for the flush before it writes anything durable. A Fetch
    or FetchSnapshot answer is where a node that no longer leads truncates its
    log or loads a snapshot, so it waits. Timers, requests and the answers to
    a leader's own requests keep being served during a slow disk.
    """
    return not (
        isinstance(item, InboundResponse)
        and isinstance(item.message, FetchResponse | FetchSnapshotResponse)
    )
