"""AllocateProducerIds: hand a broker the next block of producer ids.

The image keeps the first id no broker has been given (``next_producer_id``);
a block is ``[next, next + PRODUCER_ID_BLOCK_SIZE)`` and its ProducerIdsRecord
moves ``next`` past it. Replay refuses a record that would move it back, so
no id is handed out twice, across failovers too: a new controller starts from
the committed image. Facts from Kafka's ProducerIdControlManager.
"""

from __future__ import annotations

from typing import Final

from quorum.controller.image import MetadataImage
from quorum.controller.results import PRODUCER_ID_BLOCK_SIZE, ControllerContext, ControllerResult
from quorum.wire.error_codes import Errors
from quorum.wire.messages.allocate_producer_ids import (
    AllocateProducerIdsRequest,
    AllocateProducerIdsResponse,
)
from quorum.wire.messages.metadata_records import ProducerIdsRecord

__all__ = ["allocate_producer_ids"]

_INT64_MAX: Final = 2**63 - 1


def _problem(image: MetadataImage, request: AllocateProducerIdsRequest) -> Errors | None:
    broker = image.broker(request.broker_id)
    if broker is None:
        return Errors.BROKER_ID_NOT_REGISTERED
    if broker.epoch != request.broker_epoch:
        return Errors.STALE_BROKER_EPOCH
    if image.next_producer_id > _INT64_MAX - PRODUCER_ID_BLOCK_SIZE:
        return Errors.UNKNOWN_SERVER_ERROR  # every producer id was handed out (Kafka's answer)
    return None


def allocate_producer_ids(
    image: MetadataImage,
    request: AllocateProducerIdsRequest,
    version: int,
    ctx: ControllerContext,
) -> ControllerResult[AllocateProducerIdsResponse]:
    error = _problem(image, request)
    if error is not None:
        return ControllerResult.answer(AllocateProducerIdsResponse(error_code=error))
    start = image.next_producer_id
    record = ProducerIdsRecord(
        broker_id=request.broker_id,
        broker_epoch=request.broker_epoch,
        next_producer_id=start + PRODUCER_ID_BLOCK_SIZE,
    )
    return ControllerResult(
        (record,),
        AllocateProducerIdsResponse(
            producer_id_start=start, producer_id_len=PRODUCER_ID_BLOCK_SIZE
        ),
    )
