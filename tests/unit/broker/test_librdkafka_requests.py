"""librdkafka's exact request bytes through the broker listener: answered as Kafka answers them.

librdkafka writes an array count it learns only later as a 4-byte placeholder
(``rd_kafka_buf_write_arraycnt_pos`` in src/rdkafka_buf.h) and shrinks it to a
compact varint in flexible versions when it fills it in
(``rd_kafka_buf_finalize_arraycnt``). Every placeholder is finished
(``rd_kafka_buf_write_topic_partitions``, ``rd_kafka_make_ListOffsetsRequest``,
``rd_kafka_broker_fetch_toppars`` (Fetch), the share-fetch requests, the Produce MessageSetSize
in src/rdkafka_msgset_writer.c, tag sizes in ``rd_kafka_buf_write_tags``),
except one: ``rd_kafka_MetadataRequest0`` (src/rdkafka_request.c) asking for
every topic at Metadata v9+ keeps the placeholder's four zero bytes, meaning
"null, all topics" in its first byte. Kafka reads the body from the front
and never asks whether it used the whole frame
(``RequestContext.parseRequest``), so it serves the request; so must we.
"""

from __future__ import annotations

import struct

import pytest
import trio
import trio.testing

from broker.api.metadata import ListenerView
from broker.router import BrokerRouter
from quorum.node.connection import ServerConnection
from quorum.wire.messages import MetadataRequest, MetadataResponse
from quorum.wire.protocol import decode_response

from .records import fold, partition, register, topic

VIEW = ListenerView(
    node_id=1, cluster_id="cluster", listener_name="PLAINTEXT", host="b1", port=9093, rack=None
)
IMAGE = fold([
    register(1, 0), register(2, 1),
    topic("orders"), partition("orders", 0, [1, 2]), partition("orders", 1, [2, 1]),
    topic("audit"), partition("audit", 0, [2]),
])

# The v12 request for every topic as librdkafka 2.15/2.16 sends it, frame size excluded.
# fmt: off
# Hex layouts: one wire field per line, which the formatter would re-flow.
METADATA_V12_ALL_TOPICS = bytes.fromhex(
    "0003"  # api key 3 (Metadata)       rd_kafka_buf_new_request0
    "000c"  # api version 12             (set by rd_kafka_buf_ApiVersion_set)
    "00000002"  # correlation id
    "0007" "72646b61666b61"  # client id "rdkafka" (librdkafka's default client.id)
    "00"  # header tag block             rd_kafka_buf_upgrade_flexver_request
    "00000000"  # topics: the placeholder, never finalized for all topics
    "01"  # AllowAutoTopicCreation: a producer's allow.auto.create.topics (true)
    "00"  # IncludeTopicAuthorizedOperations false
    "00"  # body tag block               rd_kafka_buf_finalize (src/rdkafka_broker.c)
)
# fmt: on


def librdkafka_metadata_all_topics(version: int, *, allow_auto_create: bool) -> bytes:
    """rd_kafka_MetadataRequest0's bytes for every topic at a flexible ``version`` (9-12)."""
    body = b"\x00\x00\x00\x00"  # rd_kafka_buf_write_arraycnt_pos, kept for all topics at v9+
    body += bytes([allow_auto_create])  # AllowAutoTopicCreation (v4+)
    if 8 <= version <= 10:
        body += b"\x00"  # IncludeClusterAuthorizedOperations (v8-10)
    body += b"\x00"  # IncludeTopicAuthorizedOperations (v8+)
    body += b"\x00"  # the body's tag block, written by rd_kafka_buf_finalize
    header = struct.pack(">hhih", 3, version, 2, 7) + b"rdkafka" + b"\x00"
    return header + body


async def answer(frame: bytes) -> bytes:
    """What the broker listener writes back for one request frame (without its size)."""
    router = BrokerRouter(view=VIEW, image=lambda: IMAGE)
    conn = ServerConnection("librdkafka")
    await router.dispatch(conn, frame)
    conn.close()
    stream = trio.testing.MemorySendStream()
    await conn.write_loop(stream)
    return bytes(stream.get_data_nowait())


def test_the_helper_writes_the_bytes_of_the_v12_request() -> None:
    assert librdkafka_metadata_all_topics(12, allow_auto_create=True) == METADATA_V12_ALL_TOPICS
    # the placeholder leaves 3 bytes after the body Kafka's reader sees
    assert METADATA_V12_ALL_TOPICS.endswith(bytes.fromhex("00000000" "010000"))


async def test_librdkafkas_v12_request_for_every_topic_gets_every_topic() -> None:
    data = await answer(METADATA_V12_ALL_TOPICS)
    (size,) = struct.unpack_from(">i", data)
    assert size == len(data) - 4
    header, response = decode_response(data[4:], 3, 12)
    assert header.correlation_id == 2
    assert isinstance(response, MetadataResponse)
    assert [(b.node_id, b.host, b.port) for b in response.brokers] == [
        (1, "b1", 9093), (2, "b2", 9094)
    ]
    assert (response.cluster_id, response.controller_id) == ("cluster", 1)
    assert sorted((t.name, t.error_code, len(t.partitions)) for t in response.topics) == [
        ("audit", 0, 1), ("orders", 0, 2)
    ]


@pytest.mark.parametrize("allow_auto_create", [True, False], ids=["producer", "consumer"])
@pytest.mark.parametrize("version", [9, 10, 11, 12])
async def test_every_flexible_version_of_the_request_is_served_as_all_topics(
    version: int, allow_auto_create: bool
) -> None:
    frame = librdkafka_metadata_all_topics(version, allow_auto_create=allow_auto_create)
    header, response = decode_response((await answer(frame))[4:], 3, version)
    assert header.correlation_id == 2
    assert sorted(t.name for t in response.topics) == ["audit", "orders"]


def test_the_same_request_decodes_as_kafka_reads_it() -> None:
    # Kafka reads the placeholder's first byte as a null topic array, the next
    # two as false flags and the fourth as an empty tag block; the last 3 bytes
    # (librdkafka's own flags and tag block) are never read
    router = BrokerRouter(view=VIEW, image=lambda: IMAGE)
    decoded = router.apis.decode(ServerConnection("librdkafka"), METADATA_V12_ALL_TOPICS)
    assert decoded is not None
    header, request = decoded
    assert (header.api_key, header.api_version, header.client_id) == (3, 12, "rdkafka")
    assert request == MetadataRequest(
        topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
    )
