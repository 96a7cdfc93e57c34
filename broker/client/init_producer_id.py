"""The idempotent producer's trio side of InitProducerId: ask any broker, keep at it.

The answers are read by ``IdempotenceManager.handle_init_producer_id``;
this module only moves the request: to the least loaded broker, with
transactional id null and Kafka's transaction timeout for idempotent
producers (Integer.MAX_VALUE), again after ``retry.backoff.ms`` (growing
to ``retry.backoff.max.ms``) while batches wait for the id. A broken
connection counts as NETWORK_EXCEPTION (retried), a broker that does not
serve InitProducerId as UNSUPPORTED_VERSION (fatal, as in Kafka).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from typing import Final

import trio

from broker.client.backoff import ExponentialBackoff
from broker.client.errors import KafkaError, error_from_code
from broker.client.idempotence import IdempotenceManager, InitOutcome
from broker.client.network import KafkaClient
from quorum.client import UnsupportedVersionError
from quorum.wire.error_codes import Errors
from quorum.wire.messages import InitProducerIdRequest

__all__ = ["ask_for_producer_id", "init_producer_id"]

logger = logging.getLogger(__name__)

_INIT_PRODUCER_ID_KEY: Final = 22
_INIT_PRODUCER_ID_MAX_VERSION: Final = 4
# Kafka's idempotent producer asks with transactionTimeoutMs Integer.MAX_VALUE
_NO_TRANSACTION_TIMEOUT_MS: Final = 2**31 - 1


async def ask_for_producer_id(client: KafkaClient) -> tuple[Errors, int, int]:
    """One InitProducerId (transactional id null) to the least loaded broker."""
    request = InitProducerIdRequest(
        transactional_id=None, transaction_timeout_ms=_NO_TRANSACTION_TIMEOUT_MS
    )
    try:
        conn = await client.pool.any_connection(client.view)
        version = conn.version_at_most(_INIT_PRODUCER_ID_KEY, _INIT_PRODUCER_ID_MAX_VERSION)
        response = await client.request(conn, request, version=version)
    except UnsupportedVersionError:
        return Errors.UNSUPPORTED_VERSION, -1, -1
    except KafkaError as exc:
        return exc.error or Errors.NETWORK_EXCEPTION, -1, -1
    return Errors.from_code(response.error_code), response.producer_id, response.producer_epoch


async def init_producer_id(
    client: KafkaClient,
    idempotence: IdempotenceManager,
    *,
    waiting: Callable[[], bool],
    fail_waiting: Callable[[KafkaError], None],
    backoff: ExponentialBackoff,
    rng: random.Random,
    client_id: str,
) -> None:
    """Ask until the producer has an id, is fatally stopped, or no batch waits (``waiting``)."""
    failures = 0
    while idempotence.needs_producer_id and waiting():
        error, producer_id, epoch = await ask_for_producer_id(client)
        outcome = idempotence.handle_init_producer_id(error, producer_id, epoch)
        if outcome is InitOutcome.DONE:
            logger.debug("producer %s: producer id %d, epoch %d", client_id, producer_id, epoch)
        elif outcome is InitOutcome.RETRY:
            delay = backoff.delay_ms(failures, rng)
            failures += 1
            logger.debug("producer %s: InitProducerId failed with %s; again in %.0f ms",
                         client_id, error.name, delay)
            await trio.sleep(delay / 1000)
        elif outcome is InitOutcome.FAIL_BATCHES:
            # Kafka fails the batches and asks again for the next ones
            fail_waiting(error_from_code(error, context="InitProducerId"))
