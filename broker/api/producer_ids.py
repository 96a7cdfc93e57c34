"""InitProducerId (22): producer ids for idempotent producers, from blocks the controller allocates.

Kafka's broker (``RPCProducerIdManager``) hands out ids from a block of 1,000
that the active controller allocated to it with AllocateProducerIds (the
controller's side: ``quorum.controller.producer_ids_control``); it asks for
the next block once 90% of the current one is used, so a busy broker seldom
waits. An id is never handed out twice: each block comes from a committed
ProducerIdsRecord, and a broker restart asks for a new block.

What InitProducerId answers (``KafkaApis.handleInitProducerIdRequest``,
``TransactionCoordinator.handleInitProducerId``):

* no transactional id: a new producer id with epoch 0, whatever producer id
  and epoch the request carries (an idempotent producer that bumps its epoch
  does so itself; a request with only one of the two set is INVALID_REQUEST);
* an empty transactional id: INVALID_REQUEST, as Kafka answers it;
* any other transactional id: TRANSACTIONAL_ID_AUTHORIZATION_FAILED. pykraft
  has no transaction coordinator; that is the code Kafka gives a principal
  that may not use a transactional id, which every client reports at once
  instead of retrying until its timeout;
* no block yet (the controller has not answered within ``wait_ms``):
  COORDINATOR_LOAD_IN_PROGRESS, which the clients retry.

``ProducerIdPool`` is the bookkeeping (sans-I/O); ``ProducerIdSource`` asks
the controller in a task of its own and answers the requests.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Final

import attrs
import trio

from quorum.wire.error_codes import Errors
from quorum.wire.messages import InitProducerIdRequest, InitProducerIdResponse

__all__ = [
    "PREFETCH_RATIO",
    "BlockUnavailableError",
    "ProducerIdBlock",
    "ProducerIdPool",
    "ProducerIdSource",
]

logger = logging.getLogger(__name__)

# Kafka's RPCProducerIdManager asks for the next block when this share of the current is used
PREFETCH_RATIO: Final = 0.9
_NO_PRODUCER_ID: Final = -1
_NO_PRODUCER_EPOCH: Final = -1


class BlockUnavailableError(Exception):
    """The controller did not hand out a block (no controller, or an error code)."""


@attrs.frozen
class ProducerIdBlock:
    first: int
    size: int

    @property
    def end(self) -> int:
        return self.first + self.size


@attrs.define
class ProducerIdPool:
    """The ids this broker may hand out: the block in use and the next one, if fetched."""

    prefetch_ratio: float = PREFETCH_RATIO
    current: ProducerIdBlock | None = None
    next_id: int = 0
    spare: ProducerIdBlock | None = None
    requested: bool = False

    def take(self) -> int | None:
        """The next id, or None while no block holds one."""
        if self.current is None or self.next_id >= self.current.end:
            if self.spare is None:
                return None
            self.current, self.spare = self.spare, None
            self.next_id = self.current.first
        produced = self.next_id
        self.next_id += 1
        return produced

    def wants_block(self) -> bool:
        """Whether to ask the controller for a block now."""
        if self.requested or self.spare is not None:
            return False
        if self.current is None:
            return True
        used = self.next_id - self.current.first
        return used >= self.prefetch_ratio * self.current.size

    def block_requested(self) -> None:
        self.requested = True

    def block_arrived(self, block: ProducerIdBlock) -> None:
        self.requested = False
        if self.current is not None and block.first < self.current.end:
            # the controller never hands out a range twice; a lower block is a defect
            raise ValueError(f"producer id block {block} overlaps the one in use {self.current}")
        self.spare = block

    def block_failed(self) -> None:
        self.requested = False


class ProducerIdSource:
    """Answers InitProducerId; fetches blocks with ``allocate`` in tasks of its own."""

    def __init__(
        self,
        allocate: Callable[[], Awaitable[ProducerIdBlock]],
        nursery: trio.Nursery,
        *,
        wait_ms: int,
        retry_backoff_ms: int = 100,
    ) -> None:
        self._allocate = allocate
        self._nursery = nursery
        self._wait_ms = wait_ms
        self._retry_backoff_ms = retry_backoff_ms
        self.pool = ProducerIdPool()
        self._arrived = trio.Event()

    async def init_producer_id(self, request: InitProducerIdRequest) -> InitProducerIdResponse:
        refusal = _refusal(request)
        if refusal is not None:
            return InitProducerIdResponse(error_code=refusal, producer_id=-1, producer_epoch=-1)
        producer_id = await self._next_id()
        if producer_id is None:
            return InitProducerIdResponse(
                error_code=Errors.COORDINATOR_LOAD_IN_PROGRESS, producer_id=-1, producer_epoch=-1
            )
        return InitProducerIdResponse(producer_id=producer_id, producer_epoch=0)

    async def _next_id(self) -> int | None:
        with trio.move_on_after(self._wait_ms / 1000):
            while True:
                produced = self.pool.take()
                self._maybe_fetch()
                if produced is not None:
                    return produced
                await self._arrived.wait()
        return None

    def _maybe_fetch(self) -> None:
        if self.pool.wants_block():
            self.pool.block_requested()
            self._nursery.start_soon(self._fetch)

    async def _fetch(self) -> None:
        try:
            block = await self._allocate()
        except BlockUnavailableError as exc:
            logger.warning("no producer id block: %s", exc)
            await trio.sleep(self._retry_backoff_ms / 1000)  # a backoff, not a wait on a state
            self.pool.block_failed()
            # waiters ask again (and so start the next attempt)
        else:
            self.pool.block_arrived(block)
        self._arrived.set()
        self._arrived = trio.Event()


def _refusal(request: InitProducerIdRequest) -> Errors | None:
    transactional_id = request.transactional_id
    if transactional_id == "":
        return Errors.INVALID_REQUEST
    if transactional_id is not None:
        return Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if (request.producer_id == _NO_PRODUCER_ID) != (
        request.producer_epoch == _NO_PRODUCER_EPOCH
    ):
        return Errors.INVALID_REQUEST
    return None
