"""A client that proposes records to whichever node believes it leads.

Proposals go out at random times; each carries a unique payload. A proposal
is acknowledged when the leader that accepted it reports, still leading in
the same epoch, that its high watermark passed it; the invariants then check
that the committed record holds that payload at those offsets.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

import attrs

from quorum.raft.core import RaftCore
from quorum.raft.output import OffsetRange, Ready

if TYPE_CHECKING:
    from .driver import SimNode
    from .simulator import Simulation

__all__ = ["Client", "Proposal"]


@attrs.define
class Proposal:
    node_id: int
    life: int
    payloads: tuple[bytes, ...]
    epoch: int | None = None
    accepted: OffsetRange | None = None
    acknowledged_at_ms: int | None = None


class Client:
    def __init__(self, sim: Simulation, rng: random.Random) -> None:
        self.sim = sim
        self.rng = rng
        self.sent = 0
        self.pending: list[Proposal] = []
        self.acknowledged: list[Proposal] = []
        self._unchecked: list[Proposal] = []
        self._token = 0

    # -- a steady stream -----------------------------------------------------------------------

    def start(self, mean_interval_ms: int) -> None:
        """Propose at random intervals (mean ``mean_interval_ms``) until ``stop``."""
        self._token += 1
        token = self._token

        def tick() -> None:
            if token != self._token:
                return
            self.propose_to_leader()
            self.sim.queue.after(self.rng.randint(1, 2 * mean_interval_ms), "client", tick)

        self.sim.queue.after(self.rng.randint(1, mean_interval_ms), "client", tick)

    def stop(self) -> None:
        self._token += 1

    # -- one proposal ----------------------------------------------------------------------------

    def propose_to_leader(self, count: int = 1) -> Proposal | None:
        leaders = [n for n in self.sim.nodes.values() if n.alive and n.raft.is_leader]
        if not leaders:
            return None
        return self.propose(self.rng.choice(leaders), count)

    def propose(self, node: SimNode, count: int = 1) -> Proposal:
        payloads = tuple(f"v{self.sent + i}".encode() for i in range(count))
        self.sent += count
        proposal = Proposal(node.node_id, node.incarnation, payloads)

        def call(core: RaftCore, now_ms: int) -> Ready:
            proposal.epoch = core.epoch
            ready = core.propose(list(payloads), now_ms)
            proposal.accepted = ready.accepted
            self.pending.append(proposal)
            return ready

        node.feed("propose", call)
        return proposal

    def on_committed(self, node: SimNode, ready: Ready) -> None:
        """The node handed ``ready.committed`` to its state machine."""
        committed = ready.committed
        assert committed is not None
        still: list[Proposal] = []
        for proposal in self.pending:
            if proposal.node_id != node.node_id:
                still.append(proposal)
                continue
            if proposal.life != node.incarnation or proposal.epoch != ready.leader.epoch:
                continue  # its leader died or moved on: never acknowledged
            span = proposal.accepted
            assert span is not None
            if ready.role == "Leader" and span.end <= committed.end:
                proposal.acknowledged_at_ms = self.sim.now_ms
                self.acknowledged.append(proposal)
                self._unchecked.append(proposal)
            elif ready.role == "Leader":
                still.append(proposal)
        self.pending = still

    def take_acknowledged(self) -> list[Proposal]:
        taken, self._unchecked = self._unchecked, []
        return taken
