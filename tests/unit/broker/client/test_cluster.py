"""The cluster view and the tracker's refresh decisions (sans-I/O)."""

from __future__ import annotations

from broker.client import (
    STALE_METADATA_ERRORS,
    MetadataTracker,
    TopicPartition,
    cluster_view_from_metadata,
)
from quorum.wire.error_codes import Errors

from .metadata_helpers import metadata

MAX_AGE_MS = 10_000
BACKOFF_MS = 100


def tracker_with(topics: dict[str, list[tuple[int, int]]], now_ms: float = 0) -> MetadataTracker:
    tracker = MetadataTracker(metadata_max_age_ms=MAX_AGE_MS, retry_backoff_ms=BACKOFF_MS)
    tracker.add_topics(topics)
    tracker.update(metadata(topics), now_ms)
    return tracker


def test_a_view_holds_brokers_leaders_epochs_replicas_isr_and_the_controller() -> None:
    view = cluster_view_from_metadata(metadata({"t": [(2, 7), (3, 1)]}, controller_id=3))
    assert view.controller_id == 3 and view.cluster_id == "test-cluster"
    assert sorted(view.brokers) == [1, 2, 3]
    leader = view.leader_of(TopicPartition("t", 0))
    assert leader is not None and (leader.node_id, leader.address) == (2, "127.0.0.1:9002")
    assert view.leader_epoch_of(TopicPartition("t", 1)) == 1
    partition = view.partition(TopicPartition("t", 1))
    assert partition is not None and partition.replicas == partition.isr == (1, 2, 3)
    assert view.partition_count("t") == 2 and view.partition_count("nope") is None


def test_a_partition_without_a_leader_is_unavailable_and_the_topic_incomplete() -> None:
    view = cluster_view_from_metadata(metadata({"t": [(1, 0), (-1, 0), (9, 0)]}))
    assert view.available_partitions("t") == (0,)  # 9 is not a known broker
    assert view.leader_of(TopicPartition("t", 1)) is None
    assert not view.is_complete_for("t")


def test_a_refused_topic_is_kept_with_its_error_not_as_a_topic() -> None:
    view = cluster_view_from_metadata(metadata({}, missing=("gone",)))
    assert "gone" not in view.topics
    assert view.topic_errors == {"gone": Errors.UNKNOWN_TOPIC_OR_PARTITION}


def test_a_new_tracker_needs_metadata_at_once() -> None:
    tracker = MetadataTracker(metadata_max_age_ms=MAX_AGE_MS, retry_backoff_ms=BACKOFF_MS)
    assert tracker.needs_update(0)


def test_fresh_complete_metadata_is_next_needed_when_metadata_max_age_passes() -> None:
    tracker = tracker_with({"t": [(1, 0)]}, now_ms=1_000)
    assert not tracker.needs_update(1_000)
    assert tracker.time_to_update_ms(1_000) == MAX_AGE_MS
    assert not tracker.needs_update(1_000 + MAX_AGE_MS - 1)
    assert tracker.needs_update(1_000 + MAX_AGE_MS)


def test_an_unknown_topic_makes_a_refresh_due_after_the_retry_backoff() -> None:
    tracker = tracker_with({"t": [(1, 0)]})
    tracker.add_topics(["new"])
    assert tracker.needs_update(BACKOFF_MS)
    assert not tracker.needs_update(BACKOFF_MS - 1)  # the last answer came at 0


def test_a_missing_leader_keeps_a_refresh_due_until_one_is_known() -> None:
    tracker = tracker_with({"t": [(-1, 0)]})
    assert tracker.time_to_update_ms(0) == BACKOFF_MS
    tracker.update(metadata({"t": [(2, 1)]}), 500)
    assert tracker.time_to_update_ms(500) == MAX_AGE_MS


def test_errors_that_mean_stale_metadata_make_a_refresh_due_and_others_do_not() -> None:
    for error in (
        Errors.NOT_LEADER_OR_FOLLOWER,
        Errors.FENCED_LEADER_EPOCH,
        Errors.UNKNOWN_LEADER_EPOCH,
        Errors.LEADER_NOT_AVAILABLE,
    ):
        assert error in STALE_METADATA_ERRORS
        tracker = tracker_with({"t": [(1, 0)]})
        assert tracker.observe_error(error, "broker 1")
        assert tracker.needs_update(BACKOFF_MS)
        assert any(error.name in reason for reason in tracker.reasons)
    tracker = tracker_with({"t": [(1, 0)]})
    assert not tracker.observe_error(Errors.MESSAGE_TOO_LARGE, "broker 1")
    assert not tracker.needs_update(BACKOFF_MS)


def test_a_failed_attempt_waits_the_backoff_before_the_next() -> None:
    tracker = MetadataTracker(metadata_max_age_ms=MAX_AGE_MS, retry_backoff_ms=BACKOFF_MS)
    tracker.attempted(50)
    assert tracker.time_to_update_ms(60) == BACKOFF_MS - 10
    assert tracker.needs_update(50 + BACKOFF_MS)


def test_an_answer_with_an_older_leader_epoch_does_not_move_the_leader_back() -> None:
    tracker = tracker_with({"t": [(2, 5), (1, 3)]})
    tracker.update(metadata({"t": [(1, 4), (2, 4)]}), 10)
    view = tracker.view
    assert view.partition(TopicPartition("t", 0)) is not None
    assert (view.leader_of(TopicPartition("t", 0)).node_id,  # type: ignore[union-attr]
            view.leader_epoch_of(TopicPartition("t", 0))) == (2, 5)
    assert view.leader_epoch_of(TopicPartition("t", 1)) == 4


def test_the_request_names_the_wanted_topics_and_only_those_are_kept() -> None:
    tracker = tracker_with({"a": [(1, 0)], "b": [(1, 0)]})
    assert [t.name for t in tracker.metadata_request().topics or ()] == ["a", "b"]
    tracker.retain_topics(["b"])
    tracker.update(metadata({"b": [(1, 0)]}), 10)
    assert set(tracker.view.topics) == {"b"}
    everything = MetadataTracker(metadata_max_age_ms=1, retry_backoff_ms=1, all_topics=True)
    assert everything.metadata_request().topics is None


def test_a_topic_refused_later_is_dropped_from_the_view() -> None:
    tracker = tracker_with({"t": [(1, 0)]})
    tracker.update(metadata({}, missing=("t",)), 10)
    assert "t" not in tracker.view.topics
    assert tracker.view.topic_errors["t"] is Errors.UNKNOWN_TOPIC_OR_PARTITION
