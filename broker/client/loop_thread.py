"""``LoopThread``: one trio loop in a background thread, running one client.

The blocking front-ends use it so that scripts, the CLI and Spark executors
can use the trio clients without trio. The thread runs ``trio.run``; its
main task enters the client's ``async with``, reports that it is up, and
waits to be told to stop, so the client's nursery (the producer's sender,
the consumer's fetches) lives in that loop for the client's whole life.
Callers submit work with ``trio.from_thread`` and the loop's token:
``call`` waits for an async function, ``call_soon`` schedules a plain
function without waiting (the producer's hand-off of records). ``close``
runs a last async step (flush), stops the loop, and joins the thread, so
no thread outlives its client.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Generic, TypeVar

import trio

from broker.client.errors import ClientClosedError

__all__ = ["LoopThread"]

C = TypeVar("C")
T = TypeVar("T")


class LoopThread(Generic[C]):
    def __init__(
        self,
        name: str,
        open_client: Callable[[], AbstractAsyncContextManager[C]],
        *,
        start_timeout_s: float = 60.0,
    ) -> None:
        self._open_client = open_client
        self._ready = threading.Event()
        self._client: C | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._stop: trio.Event | None = None
        self._startup_error: BaseException | None = None
        # what ended the loop abnormally after start (raised by close)
        self._failure: BaseException | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        if not self._ready.wait(start_timeout_s):
            raise RuntimeError(f"{name}: the client's loop did not start in {start_timeout_s} s")
        if self._startup_error is not None:
            self._thread.join()
            raise self._startup_error

    @property
    def client(self) -> C:
        assert self._client is not None, "the loop is up once the constructor returns"
        return self._client

    @property
    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        try:
            trio.run(self._main)
        except BaseException as exc:  # reported to the caller of the constructor or close
            if not self._ready.is_set():
                self._startup_error = exc
                self._ready.set()
            else:
                self._failure = exc

    async def _main(self) -> None:
        async with self._open_client() as client:
            self._client = client
            self._token = trio.lowlevel.current_trio_token()
            self._stop = trio.Event()
            self._ready.set()
            await self._stop.wait()

    def call(self, fn: Callable[[C], Awaitable[T]]) -> T:
        """Run ``fn(client)`` in the loop and wait for its result (or exception)."""
        self._check_open()

        async def run() -> T:
            return await fn(self.client)

        return trio.from_thread.run(run, trio_token=self._token)

    def call_sync(self, fn: Callable[[C], T]) -> T:
        """Run the plain function ``fn(client)`` in the loop's thread and wait for it."""
        self._check_open()
        return trio.from_thread.run_sync(fn, self.client, trio_token=self._token)

    def call_soon(self, fn: Callable[[], object]) -> None:
        """Schedule ``fn()`` in the loop without waiting (it must not raise)."""
        self._check_open()
        assert self._token is not None
        self._token.run_sync_soon(fn)

    def close(self, last: Callable[[C], Awaitable[None]] | None = None) -> None:
        """Run ``last(client)`` (if given), leave the client's context, join the thread."""
        if self._closed:
            return
        try:
            if last is not None and self._thread.is_alive():
                self.call(last)
        finally:
            self._closed = True
            if self._thread.is_alive() and self._stop is not None:
                stop = self._stop
                with contextlib.suppress(trio.RunFinishedError):
                    trio.from_thread.run_sync(stop.set, trio_token=self._token)
            self._thread.join()
        if self._failure is not None:
            raise self._failure

    def _check_open(self) -> None:
        if self._closed or not self._thread.is_alive():
            raise ClientClosedError("the client is closed")
