"""The clickstream pipeline (pipeline/) against the layer's pykraft cluster and SparkSession.

Events come from the pipeline's own generator (pykraft's client library); every expected
figure is computed here in plain Python from the generated events, never by Spark.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipeline.clickstream_events import ClickEvent, ClickRecord, Flaw, Topics, plan_events
from pipeline.clickstream_frames import ERROR_HEADER, MISSING, NOT_AN_EVENT, SOURCE_HEADER
from pipeline.clickstream_generate import Placed, ensure_topics, produce_records
from pipeline.clickstream_jobs import StreamSettings, backfill, read_range, run_available_now

from .support import SHORT_FETCH_WAIT, read_all

MINUTE_MS = 60_000
WATERMARK_MS = MINUTE_MS
# minute-aligned and recent: the test profile's retention would delete records from 1970
BASE_MS = (int(time.time() * 1000) // MINUTE_MS - 30) * MINUTE_MS
PROBLEMS = {
    Flaw.NOT_JSON: NOT_AN_EVENT,
    Flaw.TRUNCATED: NOT_AN_EVENT,
    Flaw.NO_PAGE: MISSING + "page",
    Flaw.TEXT_TIME: MISSING + "ts",
}

Aggregate = tuple[str, int, int, int, int]  # page, window start and end (ms), events, clicks


def expected_aggregates(events: Iterable[ClickEvent], closed_by_ms: int | None) -> list[Aggregate]:
    """Per (minute, page): events and clicks; only minutes ending at or before ``closed_by_ms``
    (the watermark: Spark's append mode writes a window once the watermark reaches its end)."""
    counts: Counter[tuple[str, int]] = Counter()
    clicks: Counter[tuple[str, int]] = Counter()
    for event in events:
        key = (event.page, event.ts_ms - event.ts_ms % MINUTE_MS)
        counts[key] += 1
        clicks[key] += event.action == "click"
    return sorted(
        (page, start, start + MINUTE_MS, n, clicks[page, start])
        for (page, start), n in counts.items()
        if closed_by_ms is None or start + MINUTE_MS <= closed_by_ms
    )


def table_rows(frame: DataFrame) -> list[Aggregate]:
    # epoch milliseconds from Spark: collected timestamps would be in this process's zone
    rows = frame.select("page", F.unix_millis("window_start").alias("start"),
                        F.unix_millis("window_end").alias("end"), "events", "clicks").collect()
    return sorted((r.page, r.start, r.end, r.events, r.clicks) for r in rows)


def valid(records: Iterable[ClickRecord]) -> list[ClickEvent]:
    return [r.event for r in records if r.event is not None]


def last_watermark(records: list[ClickRecord]) -> int:
    return max(e.ts_ms for e in valid(records)) - WATERMARK_MS


@pytest.fixture
def topics(bootstrap: str, request: pytest.FixtureRequest) -> Topics:
    prefix = request.node.name.removeprefix("test_")[:40].replace("_", "-")
    names = Topics(events=f"{prefix}-in", dead_letters=f"{prefix}-dlq",
                   aggregates=f"{prefix}-out")
    assert sorted(ensure_topics(bootstrap, names)) == sorted(names.names())
    return names


def test_the_stream_job_writes_closed_minutes_once_dead_letters_and_publishes_them(
    spark: SparkSession, bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    settings = StreamSettings(bootstrap=bootstrap, table=str(tmp_path / "table"),
                              checkpoint=str(tmp_path / "checkpoint"), topics=topics,
                              watermark_delay="1 minute", source_options=SHORT_FETCH_WAIT)
    first = plan_events(120, seed=1, start_ms=BASE_MS, span_ms=6 * MINUTE_MS, malformed=4)
    placed = produce_records(bootstrap, topics.events, first)
    done = run_available_now(spark, settings)
    assert done.input_rows["aggregates"] == done.input_rows["dead-letters"] == len(first)
    closed = expected_aggregates(valid(first), last_watermark(first))
    assert closed, "the first run closed no minute: the test would prove nothing"
    assert table_rows(spark.read.parquet(settings.table)) == closed
    assert_dead_letters(bootstrap, topics, placed)
    assert_published(bootstrap, topics, closed)

    # later events: the checkpoint resumes after the first run's offsets, and the state store
    # still holds the minutes the first watermark left open
    second = plan_events(60, seed=2, start_ms=max(r.timestamp_ms for r in first) + 1,
                         span_ms=3 * MINUTE_MS, malformed=2)
    placed += produce_records(bootstrap, topics.events, second)
    done = run_available_now(spark, settings)
    assert done.input_rows["aggregates"] == len(second)
    every = expected_aggregates(valid(first + second), last_watermark(first + second))
    assert len(every) > len(closed)
    assert table_rows(spark.read.parquet(settings.table)) == every
    assert_dead_letters(bootstrap, topics, placed)
    assert_published(bootstrap, topics, every)


def assert_dead_letters(bootstrap: str, topics: Topics, placed: list[Placed]) -> None:
    """Each malformed record once, as it was sent, with what is wrong and where it was."""
    landed = read_all(bootstrap, topics.dead_letters, partitions=3)
    got = sorted((r.key, r.value, tuple(r.headers)) for r in landed)
    want = sorted(
        (p.record.key, p.record.value,
         ((ERROR_HEADER, PROBLEMS[p.record.flaw].encode()),
          (SOURCE_HEADER, f"{topics.events}-{p.partition}@{p.offset}".encode())))
        for p in placed if p.record.flaw is not None
    )
    assert got == want


def assert_published(bootstrap: str, topics: Topics, rows: list[Aggregate]) -> None:
    """The aggregates topic holds the table's rows, each once, keyed by page."""
    landed = read_all(bootstrap, topics.aggregates, partitions=3)
    got = []
    for record in landed:
        value = json.loads(record.value or b"")
        assert record.key == value["page"].encode()
        got.append((value["page"], value["window_start_ms"], value["window_end_ms"],
                    value["events"], value["clicks"]))
    assert sorted(got) == rows


def test_a_backfill_by_time_range_reads_and_aggregates_exactly_the_events_in_range(
    spark: SparkSession, bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    records = plan_events(150, seed=3, start_ms=BASE_MS, span_ms=6 * MINUTE_MS, malformed=12)
    placed = produce_records(bootstrap, topics.events, records)
    start_ms, end_ms = BASE_MS + 2 * MINUTE_MS, BASE_MS + 4 * MINUTE_MS
    inside = [p for p in placed if start_ms <= p.record.timestamp_ms < end_ms]
    assert any(p.record.flaw for p in inside), "no malformed record in range: pick another seed"

    raw = read_range(spark, bootstrap, topics.events, start_ms, end_ms, SHORT_FETCH_WAIT)
    assert sorted((r.partition, r.offset) for r in raw.select("partition", "offset").collect()) == (
        sorted((p.partition, p.offset) for p in inside))

    result = backfill(spark, bootstrap, topics.events, start_ms, end_ms,
                      path=str(tmp_path / "backfill"), options=SHORT_FETCH_WAIT)
    in_range = [p.record for p in inside]
    assert (result.events, result.malformed) == (len(valid(in_range)), len(in_range) - len(
        valid(in_range)))
    want = expected_aggregates(valid(in_range), closed_by_ms=None)
    assert table_rows(result.aggregates) == want
    assert table_rows(spark.read.parquet(str(tmp_path / "backfill"))) == want


def test_the_spark_jobs_import_nothing_of_pykraft() -> None:
    # what a spark-submit driver or an executor loads for stream and backfill; with pykraft's
    # packages made unimportable (a None in sys.modules makes `import` fail)
    code = (
        "import sys\n"
        "for name in ('broker', 'quorum', 'deploy', 'cli', 'bench'):\n"
        "    sys.modules[name] = None\n"
        "import pipeline.__main__, pipeline.clickstream_jobs, pipeline.topic_to_parquet\n"
        "print(sorted(m for m in sys.modules if m.startswith('pipeline')))\n"
    )
    finished = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=60, check=False)
    assert finished.returncode == 0, finished.stderr[-2000:]
    assert "pipeline.clickstream_generate" not in finished.stdout
    assert "pipeline.clickstream_jobs" in finished.stdout
