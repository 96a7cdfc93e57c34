"""Kafka's metadata.max.retention.ms: snapshots age out by the time in their header.

KafkaMetadataLog cleans by size, then by time; by time it drops the oldest
snapshot (and the log before the next) while a newer one exists and
``now - its LastContainedLogTimestamp > retention.ms``; -1 turns the rule off.
"""

from __future__ import annotations

from quorum.log import MemoryLog, OffsetAndEpoch, ReplicatedLog
from quorum.raft.core import RaftCore
from quorum.raft.snapshots import SnapshotTimestamps, maybe_clean, snapshot_timestamp_ms
from quorum.wire.batch import BatchHeader
from quorum.wire.codec import encode
from quorum.wire.control import ControlRecordType, build_control_batch
from quorum.wire.messages.control_records import SnapshotFooterRecord
from quorum.wire.records import build_batch_from_values

from .snapshot_builders import NOW, commit_batches, committed_leader, header_snapshot


def ids(log: ReplicatedLog) -> list[int]:
    return [s.offset for s in log.snapshot_ids()]


def test_a_snapshot_older_than_the_retention_ms_goes_with_the_log_before_the_next() -> None:
    core = committed_leader(batches=6, append_linger_ms=0, metadata_max_retention_bytes=-1,
                            metadata_max_retention_ms=1_000)
    core.create_snapshot(OffsetAndEpoch(3, 1), header_snapshot(5_000))
    core.create_snapshot(OffsetAndEpoch(5, 1), header_snapshot(9_000))
    # Kafka's test: strictly older than now - retention
    assert not core.maybe_clean_log(now_ms=6_000)
    assert core.log.log_start_offset == 0
    assert core.maybe_clean_log(now_ms=6_001)
    assert core.log.log_start_offset == 5
    # the latest stays however old it gets
    assert not core.maybe_clean_log(now_ms=10**9)
    assert ids(core.log) == [5]


def test_the_time_rule_stops_at_the_first_young_snapshot() -> None:
    core = committed_leader(batches=6, append_linger_ms=0, metadata_max_retention_bytes=-1,
                            metadata_max_retention_ms=1_000)
    for offset, timestamp in ((2, 1_000), (3, 8_000), (4, 2_000), (6, 9_000)):
        core.create_snapshot(OffsetAndEpoch(offset, 1), header_snapshot(timestamp))
    assert core.maybe_clean_log(now_ms=8_500)
    # 2 was old; 3 is young, so 4 (old) stays behind it: oldest first, as Kafka cleans
    assert core.log.log_start_offset == 3
    assert ids(core.log) == [3, 4, 6]


def test_minus_one_turns_the_time_rule_off() -> None:
    core = committed_leader(batches=6, append_linger_ms=0, metadata_max_retention_bytes=-1,
                            metadata_max_retention_ms=-1)
    core.create_snapshot(OffsetAndEpoch(3, 1), header_snapshot(0))
    core.create_snapshot(OffsetAndEpoch(5, 1), header_snapshot(0))
    assert not core.maybe_clean_log(now_ms=10**12)
    assert core.log.log_start_offset == 0 and ids(core.log) == [3, 5]


def test_the_header_record_not_the_batch_timestamp_is_the_snapshots_time() -> None:
    # Kafka stamps the header batch with its clock at writing, later than the last record
    core = committed_leader(batches=6, append_linger_ms=0, metadata_max_retention_bytes=-1,
                            metadata_max_retention_ms=1_000)
    core.create_snapshot(OffsetAndEpoch(3, 1), header_snapshot(1_000, batch_timestamp_ms=50_000))
    core.create_snapshot(OffsetAndEpoch(5, 1), header_snapshot(60_000))
    assert snapshot_timestamp_ms(core.log, OffsetAndEpoch(3, 1)) == 1_000
    assert core.maybe_clean_log(now_ms=2_001)
    assert core.log.log_start_offset == 5


def test_a_snapshot_that_does_not_start_with_a_snapshot_header_never_ages_out() -> None:
    footer = encode(SnapshotFooterRecord(), 0)
    starts = [
        b"not a batch",
        build_batch_from_values([b"data"], timestamp=0),  # a data batch first
        build_control_batch(ControlRecordType.SNAPSHOT_FOOTER, footer),  # another control record
    ]
    for data in starts:
        core = committed_leader(batches=6, append_linger_ms=0, metadata_max_retention_bytes=-1,
                                metadata_max_retention_ms=0)
        core.create_snapshot(OffsetAndEpoch(3, 1), data)
        core.create_snapshot(OffsetAndEpoch(5, 1), header_snapshot(0))
        assert snapshot_timestamp_ms(core.log, OffsetAndEpoch(3, 1)) is None
        assert not core.maybe_clean_log(now_ms=10**12)
        assert ids(core.log) == [3, 5]


def test_the_bytes_rule_runs_first_then_the_time_rule_in_one_cleaning() -> None:
    log = MemoryLog()
    for index in range(6):
        log.append(build_batch_from_values([b"v%d" % index]), epoch=1)
    log.flush()
    for offset, timestamp in ((1, 49_500), (2, 0), (3, 0), (4, 49_500)):
        log.create_snapshot(OffsetAndEpoch(offset, 1), header_snapshot(timestamp))
    # the byte budget takes the young 1 (which alone would stop the time rule), then the
    # age limit takes 2 and 3; time first would have stopped at 1 and left [2, 3, 4]
    budget = log.size_in_bytes + sum(log.snapshot_size(s) for s in log.snapshot_ids()[1:])
    assert maybe_clean(log, budget, retention_ms=1_000, now_ms=50_000)
    assert log.log_start_offset == 4 and ids(log) == [4]


def test_each_snapshot_header_is_read_once_and_forgotten_when_the_snapshot_goes() -> None:
    reads: list[OffsetAndEpoch] = []

    class CountingLog(MemoryLog):
        def read_snapshot(
            self, snapshot_id: OffsetAndEpoch, position: int = 0, max_bytes: int | None = None
        ) -> bytes:
            reads.append(snapshot_id)
            return super().read_snapshot(snapshot_id, position, max_bytes)

    log = CountingLog()
    for index in range(6):
        log.append(build_batch_from_values([b"v%d" % index]), epoch=1)
    log.flush()
    for offset, timestamp in ((2, 1_000), (4, 5_000), (6, 9_000)):
        log.create_snapshot(OffsetAndEpoch(offset, 1), header_snapshot(timestamp))
    times = SnapshotTimestamps()
    assert not maybe_clean(log, -1, retention_ms=1_500, now_ms=1_000, timestamps=times)
    assert set(reads) == {OffsetAndEpoch(2, 1)}  # the oldest only: it is young
    after_first = len(reads)
    for now_ms in (2_000, 2_500):  # still young (not strictly older than 1.5 s)
        assert not maybe_clean(log, -1, retention_ms=1_500, now_ms=now_ms, timestamps=times)
    assert len(reads) == after_first  # from the cache
    assert maybe_clean(log, -1, retention_ms=1_500, now_ms=6_000, timestamps=times)
    assert ids(log) == [4, 6]
    assert set(reads[after_first:]) == {OffsetAndEpoch(4, 1)}  # 2 came from the cache
    assert times.cached_ids == {OffsetAndEpoch(4, 1)}  # 2 is gone; 4 was read (young)


def snapshot_at_log_end(core: RaftCore) -> OffsetAndEpoch:
    """A snapshot of everything committed, stamped as a state machine stamps it: with the
    max timestamp of the last batch, which the leader stamped with the core's clock."""
    end = core.log.log_end_offset
    timestamp = BatchHeader.parse(core.log.read(end - 1, 1).records).max_timestamp
    snapshot_id = OffsetAndEpoch(end, 1)
    assert core.create_snapshot(snapshot_id, header_snapshot(timestamp))
    return snapshot_id


def test_the_core_applies_the_time_rule_on_its_cleaner_deadline() -> None:
    interval = 100_000  # the core started at 0: cleanings are due at 100 s, 200 s, ...
    core = committed_leader(batches=3, append_linger_ms=0, metadata_max_retention_bytes=-1,
                            metadata_max_retention_ms=95_000, log_cleaner_interval_ms=interval)
    first = snapshot_at_log_end(core)  # its last record appended at NOW (10 s)
    commit_batches(core, 2)
    latest = snapshot_at_log_end(core)
    assert snapshot_timestamp_ms(core.log, first) == NOW
    core.poll(interval)  # 90 s old: young
    assert core.log.log_start_offset == 0
    core.poll(2 * interval - 1)  # old now, but the next cleaning is not due
    assert core.log.log_start_offset == 0
    core.poll(2 * interval)
    assert core.log.log_start_offset == latest.offset and core.log.snapshot_ids() == [latest]
