"""PykraftAppend (10000): a private API that commits records to the metadata log.

Not a Kafka API: the key lies outside Kafka's range and only the controller
listener advertises it. It exists so that tests and benchmarks can load the
quorum through the network the way an etcd or ZooKeeper client would. The
leader answers once every record is committed (the high watermark passed
it) with the offsets it got; any other node answers NOT_LEADER_OR_FOLLOWER
with the leader it knows, so a client can redirect.

In the metadata log each appended value is wrapped in a
``PykraftPayloadRecord`` (a private metadata record type, key 10000), so the
log stays a log of metadata records that every node can replay: the
controller's image ignores it, as it ignores NoOpRecord.
"""

from __future__ import annotations

from typing import Final

import attrs

from quorum.wire.api_keys import ApiKey
from quorum.wire.apis import ApiSpec, register_api
from quorum.wire.schema import BYTES, INT16, INT32, INT64, STRING, array, field, message

__all__ = [
    "PYKRAFT_APPEND_KEY",
    "PYKRAFT_PAYLOAD_RECORD_KEY",
    "PykraftAppendRequest",
    "PykraftAppendResponse",
    "PykraftPayloadRecord",
]

PYKRAFT_APPEND_KEY: Final = ApiKey.PYKRAFT_APPEND
PYKRAFT_PAYLOAD_RECORD_KEY: Final = 10000


@message(api_key=PYKRAFT_PAYLOAD_RECORD_KEY, versions=(0, 0), flexible="0+")
@attrs.frozen(kw_only=True)
class PykraftPayloadRecord:
    """An opaque value appended through PykraftAppend (a metadata record type)."""

    payload: bytes = field(BYTES, default=b"")


@message(api_key=PYKRAFT_APPEND_KEY, versions=(0, 0), flexible="0+")
@attrs.frozen(kw_only=True)
class PykraftAppendRequest:
    # each element becomes one record's value, in order, in one or more batches
    records: tuple[bytes, ...] = field(array(BYTES), default=())


@message(api_key=PYKRAFT_APPEND_KEY, versions=(0, 0), flexible="0+")
@attrs.frozen(kw_only=True)
class PykraftAppendResponse:
    error_code: int = field(INT16, default=0)
    error_message: str | None = field(STRING, nullable="0+", default=None)
    # offsets of the first and the last record (-1 on error)
    base_offset: int = field(INT64, default=-1)
    last_offset: int = field(INT64, default=-1)
    leader_id: int = field(INT32, default=-1)
    leader_epoch: int = field(INT32, default=-1)


register_api(
    ApiSpec(
        key=PYKRAFT_APPEND_KEY,
        name="PykraftAppend",
        request=PykraftAppendRequest,
        response=PykraftAppendResponse,
        low=0,
        high=0,
    )
)
