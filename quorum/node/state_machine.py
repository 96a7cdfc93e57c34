"""The state machine hook of the task that owns the Raft core.

A state machine (the controller on a controller node, the metadata image on
a broker) lives in the core's task, so it sees every Ready in order and can
ask for records to be appended at offsets it knows in advance (a broker's
epoch is the offset of its registration record). The driver calls:

* ``observe(ready, core, now_ms)`` after each Ready was made durable and
  sent: load a snapshot the core downloaded, replay committed records,
  follow leadership, answer what the high watermark passed;
* ``call(item, core, now_ms)`` for a ``ControllerCall``: the payloads to
  propose now (maybe none); the driver proposes them at once and reports
  the offsets with ``proposed``;
* ``due(core, now_ms)`` after every step: payloads the machine wants to
  append on its own (bootstrap records, fencing on a timer);
* ``deadline_ms()``: when ``due`` should be asked next at the latest.

A combined node's core feeds two machines: ``FanOutHook`` hands every
Ready to the controller first (the one machine that proposes) and then to
observers that only replay (the broker's image), so both hold the image of
the same committed offset after each Ready.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from quorum.node.inputs import ControllerCall
from quorum.raft import OffsetRange, RaftCore, Ready

__all__ = ["FanOutHook", "ReadyObserver", "StateMachineHook"]


class StateMachineHook(Protocol):
    def observe(self, ready: Ready, core: RaftCore, now_ms: int) -> None: ...

    def call(self, item: ControllerCall, core: RaftCore, now_ms: int) -> list[bytes]: ...

    def proposed(self, offsets: OffsetRange) -> None: ...

    def due(self, core: RaftCore, now_ms: int) -> list[bytes]: ...

    def deadline_ms(self) -> int | None: ...

    def close(self) -> None:
        """The node stops: fail whatever waits for an answer."""
        ...


class ReadyObserver(Protocol):
    """A machine that only follows the log (it never proposes)."""

    def observe(self, ready: Ready, core: RaftCore, now_ms: int) -> None: ...

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

    def call(self, item: ControllerCall, core: RaftCore, now_ms: int) -> list[bytes]:
        return self.primary.call(item, core, now_ms)

    def proposed(self, offsets: OffsetRange) -> None:
        self.primary.proposed(offsets)

    def due(self, core: RaftCore, now_ms: int) -> list[bytes]:
        return self.primary.due(core, now_ms)

    def deadline_ms(self) -> int | None:
        return self.primary.deadline_ms()

    def close(self) -> None:
        self.primary.close()
        for observer in self.observers:
            observer.close()
