"""DeleteRecords on the leader waits until every replica's log start moved (Kafka's
DelayedDeleteRecords)."""

from __future__ import annotations

from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    DeleteRecordsRequest,
    DeleteRecordsRequestPartition,
    DeleteRecordsRequestTopic,
    DeleteRecordsResponse,
)

from .test_idle_sessions import WAIT_MS, Link, _link

TIMEOUT_MS = 5_000


def _request(offset: int, *, topic: str = "events", index: int = 0) -> DeleteRecordsRequest:
    return DeleteRecordsRequest(timeout_ms=TIMEOUT_MS, topics=(DeleteRecordsRequestTopic(
        name=topic,
        partitions=(DeleteRecordsRequestPartition(partition_index=index, offset=offset),),
    ),))


def _filled(records: int) -> Link:
    link = _link()
    for _ in range(records):
        link.produce(0)
        link.settle()
    link.advance(WAIT_MS)  # the follower learns the last high watermark
    link.settle()
    assert link.led(0).high_watermark == records
    return link


def _answers(link: Link, request: DeleteRecordsRequest) -> list[DeleteRecordsResponse]:
    output = link.leader.delete_records("d", request, link.now_ms)
    return [a.response for a in output.delete_records_answers]


def _low_watermark(response: DeleteRecordsResponse) -> tuple[int, int]:
    [topic] = response.topics
    [part] = topic.partitions
    return part.error_code, part.low_watermark


def test_the_answer_waits_for_the_follower_to_move_its_log_start() -> None:
    link = _filled(5)
    assert _answers(link, _request(3)) == []  # the follower's log still starts at 0
    assert link.led(0).log_start_offset == 3
    follower = link.follower.partitions.by_name("events", 0)
    assert follower is not None
    for _ in range(10):
        if link.deleted:
            break
        assert follower.log_start_offset < 3 or link.led(0).low_watermark() < 3
        link.step()
        link.advance(WAIT_MS)
    # answered once, when the follower's fetch reported its new log start
    [response] = link.deleted
    assert _low_watermark(response) == (Errors.NONE, 3)
    assert follower.log_start_offset == 3


def test_a_follower_that_never_reports_makes_the_answer_time_out() -> None:
    link = _filled(5)
    link.parked = None  # the follower's fetches stop reaching the leader
    assert _answers(link, _request(2)) == []
    link.now_ms += TIMEOUT_MS
    [response] = [a.response for a in link.leader.poll(link.now_ms).delete_records_answers]
    assert _low_watermark(response) == (Errors.REQUEST_TIMED_OUT, -1)


def test_bad_requests_are_answered_at_once() -> None:
    link = _filled(2)
    [above] = _answers(link, _request(9))
    assert _low_watermark(above) == (Errors.OFFSET_OUT_OF_RANGE, -1)
    [unknown] = _answers(link, _request(1, topic="nope"))
    assert _low_watermark(unknown) == (Errors.UNKNOWN_TOPIC_OR_PARTITION, -1)
    [not_led] = [a.response for a in link.follower.delete_records(
        "d", _request(1), link.now_ms
    ).delete_records_answers]
    assert _low_watermark(not_led) == (Errors.NOT_LEADER_OR_FOLLOWER, -1)
