"""InitProducerId on the broker: ids from controller blocks, refusals as Kafka answers them."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from broker.api.producer_ids import (
    BlockUnavailableError,
    ProducerIdBlock,
    ProducerIdPool,
    ProducerIdSource,
)
from quorum.wire.error_codes import Errors
from quorum.wire.messages import InitProducerIdRequest


class Controller:
    """Hands out consecutive blocks of ``size``; fails while ``down``; counts the asks."""

    def __init__(self, size: int = 10) -> None:
        self.size = size
        self.next = 0
        self.asked = 0
        self.down = False
        self.release: trio.Event | None = None

    async def allocate(self) -> ProducerIdBlock:
        self.asked += 1
        if self.release is not None:
            await self.release.wait()
        if self.down:
            raise BlockUnavailableError("no active controller")
        block = ProducerIdBlock(self.next, self.size)
        self.next += self.size
        return block


def idempotent() -> InitProducerIdRequest:
    return InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000)


def test_the_pool_hands_out_a_block_in_order_then_its_spare() -> None:
    pool = ProducerIdPool()
    assert pool.take() is None and pool.wants_block()
    pool.block_requested()
    assert not pool.wants_block()  # one request at a time
    pool.block_arrived(ProducerIdBlock(0, 10))
    taken = [pool.take() for _ in range(9)]
    assert taken == list(range(9))
    assert pool.wants_block()  # 90% used: the next block is asked for now
    pool.block_requested()
    pool.block_arrived(ProducerIdBlock(1_000, 10))
    assert [pool.take(), pool.take(), pool.take()] == [9, 1_000, 1_001]


def test_a_block_below_the_one_in_use_is_refused() -> None:
    pool = ProducerIdPool()
    pool.block_arrived(ProducerIdBlock(100, 10))
    assert pool.take() == 100
    with pytest.raises(ValueError, match="overlaps"):
        pool.block_arrived(ProducerIdBlock(105, 10))


async def test_ids_are_unique_across_blocks_and_the_next_block_is_fetched_early() -> None:
    controller = Controller(size=10)
    async with trio.open_nursery() as nursery:
        source = ProducerIdSource(controller.allocate, nursery, wait_ms=1_000)
        ids = []
        for _ in range(35):
            answer = await source.init_producer_id(idempotent())
            assert answer.error_code == Errors.NONE and answer.producer_epoch == 0
            ids.append(answer.producer_id)
        await trio.testing.wait_all_tasks_blocked()
    assert ids == list(range(35))
    assert controller.asked == 4  # 0-9, 10-19, 20-29, and 30-39 asked for at 90% of the third


async def test_requests_waiting_for_the_first_block_share_one_allocation() -> None:
    controller = Controller(size=100)
    controller.release = trio.Event()
    answers = []

    async def ask() -> None:
        answers.append(await source.init_producer_id(idempotent()))

    async with trio.open_nursery() as nursery:
        source = ProducerIdSource(controller.allocate, nursery, wait_ms=5_000)
        for _ in range(5):
            nursery.start_soon(ask)
        await trio.testing.wait_all_tasks_blocked()
        assert controller.asked == 1 and answers == []
        controller.release.set()
    assert sorted(a.producer_id for a in answers) == [0, 1, 2, 3, 4]
    assert controller.asked == 1


async def test_without_a_controller_the_answer_is_load_in_progress_and_a_later_ask_succeeds(
    autojump_clock: trio.testing.MockClock,
) -> None:
    controller = Controller()
    controller.down = True
    async with trio.open_nursery() as nursery:
        source = ProducerIdSource(controller.allocate, nursery, wait_ms=1_000)
        refused = await source.init_producer_id(idempotent())
        assert refused.error_code == Errors.COORDINATOR_LOAD_IN_PROGRESS
        assert refused.producer_id == -1
        assert controller.asked > 1  # waiters kept asking, one attempt at a time, backed off
        controller.down = False
        answer = await source.init_producer_id(idempotent())
        assert answer.error_code == Errors.NONE and answer.producer_id == 0
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize(
    ("request_", "error"),
    [
        (InitProducerIdRequest(transactional_id="tx-1", transaction_timeout_ms=60_000),
         Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
        (InitProducerIdRequest(transactional_id="", transaction_timeout_ms=60_000),
         Errors.INVALID_REQUEST),
        (InitProducerIdRequest(transactional_id=None, producer_id=5, producer_epoch=-1),
         Errors.INVALID_REQUEST),
    ],
)
async def test_refused_requests_take_no_id(request_: InitProducerIdRequest, error: Errors) -> None:
    controller = Controller()
    async with trio.open_nursery() as nursery:
        source = ProducerIdSource(controller.allocate, nursery, wait_ms=1_000)
        answer = await source.init_producer_id(request_)
        assert answer.error_code == error and answer.producer_id == -1
        assert controller.asked == 0
        # a known producer id bumping its epoch gets a new id, as Kafka gives one
        bumped = await source.init_producer_id(
            InitProducerIdRequest(transactional_id=None, producer_id=7, producer_epoch=3)
        )
        assert bumped.error_code == Errors.NONE and bumped.producer_id == 0
