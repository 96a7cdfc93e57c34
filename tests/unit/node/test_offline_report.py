"""When the active controller logs its offline partitions (``OfflineReport``)."""

from __future__ import annotations

import uuid

from quorum.node.offline_report import REPORT_INTERVAL_MS, SAMPLE_SIZE, OfflineReport
from tests.unit.controller.large_images import large_image

IMAGE = large_image({"events": 100})
EVENTS = uuid.UUID(int=1)  # large_image numbers its topics from 1


def offline(count: int) -> set[tuple[uuid.UUID, int]]:
    return {(EVENTS, index) for index in range(count)}


def test_the_first_offline_partitions_are_logged_at_once_with_a_bounded_sample() -> None:
    report = OfflineReport()
    line = report.changed(offline(3), 3, IMAGE, now_ms=0)
    assert line == (
        "3 partition(s) offline, no eligible leader in the ISR and unclean election not "
        "enabled for them: events-0, events-1, events-2"
    )
    many = report.changed(offline(60), 60, IMAGE, now_ms=REPORT_INTERVAL_MS)
    assert many is not None and many.startswith("60 partition(s) offline")
    assert many.endswith(f" and {60 - SAMPLE_SIZE} more")
    assert many.count("events-") == SAMPLE_SIZE


def test_changes_within_the_interval_are_not_logged_until_it_has_passed() -> None:
    report = OfflineReport()
    assert report.changed(offline(1), 1, IMAGE, now_ms=1_000) is not None
    # a fencing publishes a part every few milliseconds: one line, not one per part
    for changes, now_ms in enumerate(range(1_010, 1_000 + REPORT_INTERVAL_MS, 500), start=2):
        assert report.changed(offline(changes), changes, IMAGE, now_ms) is None
    # nothing new since the last look: nothing to say, however long ago the last line was
    later = report.changed(offline(30), 40, IMAGE, now_ms=1_000 + REPORT_INTERVAL_MS)
    assert later is not None and later.startswith("30 partition(s) offline")
    assert report.changed(offline(30), 40, IMAGE, now_ms=1_000 + 5 * REPORT_INTERVAL_MS) is None


def test_the_set_emptying_is_logged_at_once() -> None:
    report = OfflineReport()
    assert report.changed(offline(5), 5, IMAGE, now_ms=0) is not None
    assert report.changed(set(), 10, IMAGE, now_ms=1) == "no partition is offline"
    # and offline again right after: the first line of a new episode is not held back
    again = report.changed(offline(2), 12, IMAGE, now_ms=2)
    assert again is not None and again.startswith("2 partition(s) offline")
