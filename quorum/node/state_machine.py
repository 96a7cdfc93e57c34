"""The state machine hook of the task that owns the Raft core.

A state machine (the controller on a controller node, the metadata image on
a broker) lives in the core's task, so it sees every Ready in order and can
ask for records to be appended at offsets it knows in advance (a broker's
epoch is the offset of its registration record). Its work grows with the
metadata, so it is done in bounded slices (``quorum.controller.slicing``)
between the core's inputs. The driver calls:

* ``observe(ready, core, now_ms)`` after each Ready was made durable and
  sent: note what it committed or loaded and follow leadership (cheap: the
  replay itself happens in ``work``);
* ``call(item, core, now_ms)`` for a ``ControllerCall``: queue it (or answer
  at once, e.g. NOT_CONTROLLER);
* ``has_work(now_ms)``: whether a slice is ready to run now;
* ``work(core, now_ms)``: run one bounded slice (replay, a snapshot part, a
  slice of a controller operation, the timers when due); ``Work.payloads``
  are records to propose now: the driver proposes them at once and reports
  their offsets with ``proposed``; ``Work.snapshots`` are snapshots built, for
  the driver to store (a large one in a worker thread);
* ``deadline_ms()``: when ``has_work`` may become true by time alone.

A combined node's core feeds two machines: ``FanOutHook`` hands every
Ready to the controller first (the one machine that proposes) and then to
observers that only replay (the broker's image), and shares each ``work``
call among them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import attrs

from quorum.controller.slicing import SliceReport
from quorum.node.inputs import ControllerCall
from quorum.node.metadata_follower import SnapshotFile
from quorum.raft import OffsetRange, RaftCore, Ready

__all__ = ["FanOutHook", "ReadyObserver", "StateMachineHook", "Work"]


@attrs.frozen
class Work:
    """What one ``work`` call did."""

    payloads: list[bytes] = attrs.field(factory=list)  # records to propose now
    slices: tuple[SliceReport, ...] = ()
    # (queue ms, processing ms) of each controller operation that ended in this call
    finished_operations: tuple[tuple[float, float], ...] = ()
    # snapshots built in this call, for the driver to store (outside the slice)
    snapshots: tuple[SnapshotFile, ...] = ()


class StateMachineHook(Protocol):
    def observe(self, ready: Ready, core: RaftCore, now_ms: int) -> None: ...

    def call(self, item: ControllerCall, core: RaftCore, now_ms: int) -> None: ...

    def broker_connection_lost(self, broker_id: int, now_ms: int) -> None:
        """Every connection on which ``broker_id`` heartbeat to this node has closed."""
        ...

    def proposed(self, offsets: OffsetRange) -> None: ...

    def has_work(self, now_ms: int) -> bool: ...

    def work(self, core: RaftCore, now_ms: int) -> Work: ...

    def deadline_ms(self) -> int | None: ...

    def close(self) -> None:
        """The node stops: fail whatever waits for an answer."""
        ...


class ReadyObserver(Protocol):
    """A machine that only follows the log (it never proposes)."""

    def observe(self, ready: Ready, core: RaftCore, now_ms: int) -> None: ...

    def has_work(self, now_ms: int) -> bool: ...

    def work(self, core: RaftCore, now_ms: int) -> Work: ...

    def close(self) -> None: ...


class FanOutHook:
    """``primary`` answers calls and proposes; every Ready goes to it, then to ``observers``."""

    def __init__(self, primary: StateMachineHook, observers: Sequence[ReadyObserver]) -> None:
        self.primary = primary
        self.observers = tuple(observers)

    def observe(self, ready: Ready, core: RaftCore, now_ms: int) -> None:
        self.primary.observe(ready, core, now_ms)
        for observer in self.observers:
            observer.observe(ready, core, now_ms)

    def call(self, item: ControllerCall, core: RaftCore, now_ms: int) -> None:
        self.primary.call(item, core, now_ms)

    def broker_connection_lost(self, broker_id: int, now_ms: int) -> None:
        self.primary.broker_connection_lost(broker_id, now_ms)

    def proposed(self, offsets: OffsetRange) -> None:
        self.primary.proposed(offsets)

    def has_work(self, now_ms: int) -> bool:
        return self.primary.has_work(now_ms) or any(o.has_work(now_ms) for o in self.observers)

    def work(self, core: RaftCore, now_ms: int) -> Work:
        """One slice of the primary's and of each observer's (each bounded)."""
        work = self.primary.work(core, now_ms)
        slices, snapshots = list(work.slices), list(work.snapshots)
        for observer in self.observers:
            if observer.has_work(now_ms):
                done = observer.work(core, now_ms)
                slices += done.slices
                snapshots += done.snapshots
        return attrs.evolve(work, slices=tuple(slices), snapshots=tuple(snapshots))

    def deadline_ms(self) -> int | None:
        return self.primary.deadline_ms()

    def close(self) -> None:
        self.primary.close()
        for observer in self.observers:
            observer.close()
