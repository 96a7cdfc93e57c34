"""``RecordFuture``: the outcome of one ``send``, awaitable in trio.

Resolved from the producer's trio thread; ``await future`` (or
``await future.wait()``) gives the ``RecordMetadata`` or raises the
``KafkaError``. ``add_done_callback`` lets the blocking front-end hand
the outcome to a ``concurrent.futures.Future`` without a trio event per
record: the event is made only for a task that waits.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import trio

from broker.client.errors import KafkaError
from broker.client.types import RecordMetadata

__all__ = ["RecordFuture"]


class RecordFuture:
    __slots__ = ("_callbacks", "_error", "_event", "_metadata")

    def __init__(self) -> None:
        self._metadata: RecordMetadata | None = None
        self._error: KafkaError | None = None
        self._event: trio.Event | None = None
        self._callbacks: list[Callable[[RecordFuture], None]] | None = None

    def done(self) -> bool:
        return self._metadata is not None or self._error is not None

    def result(self) -> RecordMetadata:
        """The metadata of a delivered record; raises its KafkaError, or if not done yet."""
        if self._error is not None:
            raise self._error
        if self._metadata is None:
            raise RuntimeError("the record's delivery is not finished yet: await it")
        return self._metadata

    def exception(self) -> KafkaError | None:
        return self._error

    def add_done_callback(self, callback: Callable[[RecordFuture], None]) -> None:
        """Call ``callback(self)`` once resolved (at once if it already is)."""
        if self.done():
            callback(self)
        elif self._callbacks is None:
            self._callbacks = [callback]
        else:
            self._callbacks.append(callback)

    def resolve(self, outcome: RecordMetadata | KafkaError) -> None:
        assert not self.done(), "a record is delivered or failed once"
        if isinstance(outcome, KafkaError):
            self._error = outcome
        else:
            self._metadata = outcome
        if self._event is not None:
            self._event.set()
        callbacks, self._callbacks = self._callbacks, None
        for callback in callbacks or ():
            callback(self)

    async def wait(self) -> RecordMetadata:
        if not self.done():
            if self._event is None:
                self._event = trio.Event()
            await self._event.wait()
        return self.result()

    def __await__(self) -> Generator[Any, None, RecordMetadata]:
        return self.wait().__await__()
