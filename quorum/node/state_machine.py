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
"""

from __future__ import annotations

from typing import Protocol

from quorum.node.inputs import ControllerCall
from quorum.raft import OffsetRange, RaftCore, Ready

__all__ = ["StateMachineHook"]


class StateMachineHook(Protocol):
    def observe(self, ready: Ready, core: RaftCore, now_ms: int) -> None: ...

    def call(self, item: ControllerCall, core: RaftCore, now_ms: int) -> list[bytes]: ...

    def proposed(self, offsets: OffsetRange) -> None: ...

    def due(self, core: RaftCore, now_ms: int) -> list[bytes]: ...

    def deadline_ms(self) -> int | None: ...

    def close(self) -> None:
        """The node stops: fail whatever waits for an answer."""
        ...
