"""Broker registration, heartbeats, fencing, controlled shutdown, session expiry."""

from __future__ import annotations

import uuid

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from quorum.controller.broker_sessions import BrokerSessions
from quorum.controller.cluster_control import (
    lost_connection_grace_ms,
    next_fence_deadline_ms,
    register_broker,
)
from quorum.controller.image import NO_LEADER, BrokerEndpoint
from quorum.wire.error_codes import Errors
from quorum.wire.messages.broker_lifecycle import BrokerRegistrationRequestFeature
from quorum.wire.messages.metadata_records import (
    BrokerRegistrationChangeRecord,
    PartitionChangeRecord,
    RegisterBrokerRecord,
    UnregisterBrokerRecord,
)
from tests.unit.controller.cluster_world import CONFIG, SESSION_MS, Cluster, registration_request

# -- registration --


def test_registration_epoch_is_the_offset_of_its_register_broker_record() -> None:
    cluster = Cluster()
    offset = cluster.offset
    result = cluster.register(1, rack="r1")
    assert result.response.error_code == 0
    assert result.response.broker_epoch == offset
    record = result.records[0]
    assert isinstance(record, RegisterBrokerRecord)
    assert record.broker_epoch == offset and record.fenced
    broker = cluster.image.brokers[1]
    assert broker.epoch == offset and broker.fenced and broker.rack == "r1"
    assert broker.listeners == (BrokerEndpoint("PLAINTEXT", "broker1", 9092, 0),)
    assert ("metadata.version", 1, 21) in [
        (f.name, f.min_version, f.max_version) for f in broker.features
    ]


def test_registration_with_a_wrong_cluster_id_is_rejected() -> None:
    cluster = Cluster()
    before = cluster.image
    result = cluster.register(1, cluster_id="another-cluster")
    assert result.response.error_code == Errors.INCONSISTENT_CLUSTER_ID
    cluster.rejected(result, before)
    assert 1 not in cluster.sessions


def test_broker_that_cannot_run_the_finalized_metadata_version_is_rejected() -> None:
    cluster = Cluster()
    before = cluster.image
    too_old = cluster.register(1, metadata_version=(1, 20))
    assert too_old.response.error_code == Errors.UNSUPPORTED_VERSION
    cluster.rejected(too_old, before)
    # a broker naming no range is taken to support only the first KRaft version (1)
    silent = cluster.register(2, metadata_version=None)
    assert silent.response.error_code == Errors.UNSUPPORTED_VERSION
    cluster.rejected(silent, before)


def test_broker_must_support_every_finalized_feature_it_names() -> None:
    cluster = Cluster()
    before = cluster.image
    request = registration_request(1, uuid.uuid4())
    unknown = BrokerRegistrationRequestFeature(
        name="group.version", min_supported_version=1, max_supported_version=1
    )
    request = attrs.evolve(request, features=(*request.features, unknown))
    result = register_broker(cluster.image, request, 4, cluster.ctx(), cluster.sessions)
    # group.version is not finalized (level 0) and the broker cannot run level 0
    assert result.response.error_code == Errors.UNSUPPORTED_VERSION
    cluster.rejected(result, before)


def test_same_incarnation_registering_again_keeps_epoch_and_state_and_writes_nothing() -> None:
    cluster = Cluster()
    cluster.start(1)
    epoch = cluster.image.brokers[1].epoch
    before = cluster.image
    cluster.advance(1000)
    again = cluster.register(1, new_incarnation=False)
    assert again.response.error_code == 0
    assert again.response.broker_epoch == epoch
    cluster.rejected(again, before)  # nothing written
    assert not cluster.image.brokers[1].fenced


def test_new_incarnation_while_the_old_session_is_alive_is_a_duplicate_registration() -> None:
    cluster = Cluster()
    cluster.start(1)
    cluster.advance(SESSION_MS)  # still alive: last contact + timeout >= now
    before = cluster.image
    result = cluster.register(1)
    assert result.response.error_code == Errors.DUPLICATE_BROKER_REGISTRATION
    cluster.rejected(result, before)


def test_new_incarnation_after_session_expiry_gets_a_new_epoch_and_starts_fenced() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    cluster.add_topic("t", [1, 2])
    old_epoch = cluster.image.brokers[1].epoch
    cluster.advance(SESSION_MS + 1)
    offset = cluster.offset
    result = cluster.register(1)
    assert result.response.error_code == 0
    # the restarted broker may have lost its unflushed tail: it leaves ISR and leadership
    # first (its old incarnation still leads), and its registration follows at once
    *moves, registration = result.records
    assert isinstance(registration, RegisterBrokerRecord)
    assert moves and all(isinstance(r, PartitionChangeRecord) for r in moves)
    epoch = offset + len(moves)
    assert result.response.broker_epoch == epoch != old_epoch
    broker = cluster.image.brokers[1]
    assert broker.fenced and broker.epoch == epoch
    partition = cluster.partition("t")
    assert partition.leader == 2 and partition.isr == (2,)


def test_fenced_broker_may_register_a_new_incarnation_at_once() -> None:
    cluster = Cluster()
    cluster.start(1)
    cluster.heartbeat(1, want_fence=True)
    assert cluster.image.brokers[1].fenced
    result = cluster.register(1)
    assert result.response.error_code == 0
    assert cluster.image.brokers[1].epoch == result.response.broker_epoch


# -- heartbeats --


def test_broker_stays_fenced_until_a_heartbeat_reports_its_registration_offset() -> None:
    cluster = Cluster()
    epoch = cluster.register(1).response.broker_epoch
    before = cluster.image
    behind = cluster.heartbeat(1, offset=epoch - 1)
    assert behind.response.error_code == 0
    assert not behind.response.is_caught_up and behind.response.is_fenced
    cluster.rejected(behind, before)
    caught_up = cluster.heartbeat(1, offset=epoch)
    assert caught_up.response.is_caught_up and not caught_up.response.is_fenced
    assert caught_up.records[0] == BrokerRegistrationChangeRecord(
        broker_id=1, broker_epoch=epoch, fenced=-1
    )
    assert not cluster.image.brokers[1].fenced


def test_broker_that_wants_to_stay_fenced_is_not_unfenced() -> None:
    cluster = Cluster()
    cluster.register(1)
    result = cluster.heartbeat(1, want_fence=True)
    assert result.response.is_caught_up and result.response.is_fenced
    assert result.records == ()


def test_unfenced_broker_leads_leaderless_partitions_where_it_is_in_the_isr() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    cluster.add_topic("t", [1, 2])
    cluster.heartbeat(2, want_fence=True)
    cluster.heartbeat(1, want_fence=True)
    offline = cluster.partition("t")
    assert offline.leader == NO_LEADER and offline.isr == (1,)
    result = cluster.heartbeat(1)
    assert not result.response.is_fenced
    assert any(isinstance(r, PartitionChangeRecord) for r in result.records)
    assert cluster.partition("t").leader == 1


def test_heartbeat_with_a_stale_epoch_is_rejected() -> None:
    cluster = Cluster()
    cluster.start(1)
    before = cluster.image
    result = cluster.heartbeat(1, epoch=cluster.image.brokers[1].epoch - 1)
    assert result.response.error_code == Errors.STALE_BROKER_EPOCH
    cluster.rejected(result, before)


def test_heartbeat_from_an_unknown_broker_is_rejected() -> None:
    cluster = Cluster()
    before = cluster.image
    result = cluster.heartbeat(7, epoch=3)
    assert result.response.error_code == Errors.BROKER_ID_NOT_REGISTERED
    cluster.rejected(result, before)
    assert 7 not in cluster.sessions


def test_want_fence_fences_the_broker_and_moves_its_leadership_away() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    cluster.add_topic("t", [1, 2])
    result = cluster.heartbeat(1, want_fence=True)
    # the answer tells the state when it was given; a fencing job follows (here at once):
    # the partition changes first, the fence record with the last of them (Kafka's order)
    assert not result.response.is_fenced and not result.response.should_shut_down
    assert isinstance(result.records[-1], BrokerRegistrationChangeRecord)
    assert result.records[-1].fenced == 1
    assert isinstance(result.records[0], PartitionChangeRecord)
    partition = cluster.partition("t")
    assert partition.leader == 2 and partition.isr == (2,)
    assert cluster.heartbeat(1, want_fence=True).response.is_fenced


# -- controlled shutdown --


def test_controlled_shutdown_moves_leadership_then_waits_for_the_other_brokers() -> None:
    cluster = Cluster()
    cluster.start(1, 2, 3)
    cluster.add_topic("t", [1, 2], [2, 1])
    first = cluster.heartbeat(1, want_shut_down=True)
    assert not first.response.should_shut_down and not first.response.is_fenced
    # the mark first (Kafka's order), then a job moves the leaderships and ISR places
    mark, *moves = first.records
    assert mark == BrokerRegistrationChangeRecord(
        broker_id=1, broker_epoch=cluster.image.brokers[1].epoch, in_controlled_shutdown=1
    )
    assert moves and all(isinstance(r, PartitionChangeRecord) for r in moves)
    assert cluster.image.brokers[1].in_controlled_shutdown
    assert cluster.image.partitions_led_by(1) == []
    assert cluster.partition("t").isr == (2,) and cluster.partition("t", 1).isr == (2,)
    # brokers 2 and 3 have not yet reported an offset past those records
    waiting = cluster.heartbeat(1, want_shut_down=True)
    assert not waiting.response.should_shut_down and waiting.records == ()
    cluster.heartbeat(2)
    still = cluster.heartbeat(1, want_shut_down=True)
    assert not still.response.should_shut_down
    cluster.heartbeat(3)
    done = cluster.heartbeat(1, want_shut_down=True)
    assert done.response.should_shut_down and done.response.is_fenced
    assert cluster.image.brokers[1].fenced


def test_broker_that_holds_nothing_shuts_down_at_once() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    cluster.add_topic("t", [2])
    result = cluster.heartbeat(1, want_shut_down=True)
    assert result.response.should_shut_down and result.response.is_fenced
    assert result.records == (BrokerRegistrationChangeRecord(
        broker_id=1, broker_epoch=cluster.image.brokers[1].epoch, fenced=1
    ),)
    assert cluster.image.brokers[1].fenced


def test_broker_that_shares_isrs_leaves_them_in_a_controlled_shutdown_first() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    cluster.add_topic("t", [2, 1])
    first = cluster.heartbeat(1, want_shut_down=True)
    assert not first.response.should_shut_down and not first.response.is_fenced
    assert cluster.image.brokers[1].in_controlled_shutdown
    assert cluster.partition("t").isr == (2,)  # the job that followed took it out
    cluster.heartbeat(2)  # broker 2 has seen that
    done = cluster.heartbeat(1, want_shut_down=True)
    assert done.response.should_shut_down and done.response.is_fenced
    assert cluster.image.brokers[1].fenced


def test_fenced_broker_asking_to_shut_down_is_told_to_now_without_records() -> None:
    cluster = Cluster()
    cluster.register(1)
    before = cluster.image
    result = cluster.heartbeat(1, want_shut_down=True, offset=0)
    assert result.response.should_shut_down and result.response.is_fenced
    cluster.rejected(result, before)


def test_broker_told_to_shut_down_is_never_unfenced_again() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    cluster.add_topic("t", [1, 2])
    cluster.heartbeat(1, want_shut_down=True)
    cluster.heartbeat(2)
    assert cluster.heartbeat(1, want_shut_down=True).response.should_shut_down
    result = cluster.heartbeat(1)
    assert result.response.is_fenced and result.records == ()


def test_new_controller_waits_for_every_record_before_letting_a_broker_go() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    cluster.add_topic("t", [1, 2])
    cluster.heartbeat(1, want_shut_down=True)
    # failover: the new controller's sessions know no shutdown offset
    cluster.sessions.reset(cluster.image.brokers, cluster.now_ms)
    assert not cluster.heartbeat(1, want_shut_down=True).response.should_shut_down
    cluster.heartbeat(2)
    assert cluster.heartbeat(1, want_shut_down=True).response.should_shut_down


# -- unregistration --


def test_unregister_takes_the_broker_out_of_isrs_and_drops_its_registration() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    cluster.add_topic("t", [1, 2])
    epoch = cluster.image.brokers[1].epoch
    result = cluster.unregister(1)
    assert result.response.error_code == 0
    assert result.records[-1] == UnregisterBrokerRecord(broker_id=1, broker_epoch=epoch)
    assert 1 not in cluster.image.brokers and 1 not in cluster.sessions
    assert cluster.partition("t").leader == 2 and cluster.partition("t").isr == (2,)


def test_unregister_of_an_unknown_broker_is_rejected() -> None:
    cluster = Cluster()
    before = cluster.image
    result = cluster.unregister(4)
    assert result.response.error_code == Errors.BROKER_ID_NOT_REGISTERED
    assert result.response.error_message
    cluster.rejected(result, before)


# -- session expiry --


def test_heartbeats_keep_a_session_alive() -> None:
    cluster = Cluster()
    cluster.start(1)
    for _ in range(5):
        cluster.advance(SESSION_MS - 1)
        cluster.heartbeat(1)
        assert cluster.fence_stale().records == ()
    assert not cluster.image.brokers[1].fenced


def test_session_expiry_fences_one_broker_per_call_and_moves_leadership_away() -> None:
    cluster = Cluster()
    cluster.start(1, 2, 3)
    cluster.add_topic("t", [1, 3], [2, 3])
    cluster.advance(100)
    cluster.heartbeat(2)  # broker 1 has been silent longest
    cluster.advance(SESSION_MS)
    cluster.heartbeat(3)
    first = cluster.fence_stale()
    assert first.records[-1] == BrokerRegistrationChangeRecord(
        broker_id=1, broker_epoch=cluster.image.brokers[1].epoch, fenced=1
    )
    assert cluster.image.brokers[1].fenced and not cluster.image.brokers[2].fenced
    assert cluster.partition("t").leader == 3
    cluster.advance(100)
    second = cluster.fence_stale()
    assert cluster.image.brokers[2].fenced and second.records
    assert cluster.partition("t", 1).leader == 3
    assert cluster.fence_stale().records == ()
    assert not cluster.image.brokers[3].fenced


def test_last_isr_member_fenced_leaves_the_partition_offline_until_it_returns() -> None:
    cluster = Cluster()
    cluster.start(1)
    cluster.add_topic("t", [1])
    cluster.advance(SESSION_MS + 1)
    cluster.fence_stale()
    partition = cluster.partition("t")
    assert partition.leader == NO_LEADER and partition.isr == (1,)
    cluster.heartbeat(1)
    assert cluster.partition("t").leader == 1


def test_fence_deadline_is_the_first_expiry_of_an_unfenced_broker() -> None:
    cluster = Cluster()
    cluster.start(1)
    start = cluster.now_ms
    cluster.register(2)  # fenced: its session never expires into fencing
    cluster.advance(50)
    deadline = next_fence_deadline_ms(cluster.image, cluster.sessions, SESSION_MS)
    assert deadline == start + SESSION_MS + 1
    assert next_fence_deadline_ms(cluster.image, BrokerSessions(), SESSION_MS) is None


# -- a random walk of the whole state machine --

_OPS = st.lists(
    st.tuples(
        st.sampled_from(["register", "heartbeat", "fence", "shutdown", "expire", "unregister"]),
        st.integers(min_value=1, max_value=3),
    ),
    max_size=40,
)


@settings(max_examples=75, deadline=None)
@given(ops=_OPS)
def test_no_broker_that_is_not_active_ever_leads(ops: list[tuple[str, int]]) -> None:
    cluster = Cluster()
    cluster.start(1, 2, 3)
    cluster.add_topic("t", [1, 2, 3], [2, 3, 1], [3, 1, 2])
    for op, broker_id in ops:
        registered = broker_id in cluster.image.brokers
        if op == "register":
            cluster.register(broker_id)
        elif op == "unregister":
            cluster.unregister(broker_id)
        elif op == "expire":
            cluster.advance(SESSION_MS // 2)
            cluster.fence_stale()
        elif registered:
            cluster.heartbeat(
                broker_id, want_fence=op == "fence", want_shut_down=op == "shutdown"
            )
        # Cluster.fold checked the partition invariants; now the broker rules
        for _, _, partition in cluster.image.iter_partitions():
            if partition.leader != NO_LEADER:
                assert partition.leader in cluster.image.active_broker_ids()
            active_in_isr = [b for b in partition.isr if b in cluster.image.active_broker_ids()]
            if active_in_isr:
                assert partition.leader != NO_LEADER, partition


def test_a_late_touch_never_moves_a_sessions_last_contact_back() -> None:
    sessions = BrokerSessions()
    sessions.touch(1, 5_000, offset=7)
    # a heartbeat operation that started at 3,000 finishes after a later arrival touched
    sessions.touch(1, 3_000, offset=8)
    assert sessions.expiry_ms(1, SESSION_MS) == 5_000 + SESSION_MS + 1
    assert sessions.metadata_offset(1) == 8


# -- a broker whose connections closed --

GRACE_MS = lost_connection_grace_ms(CONFIG)  # two heartbeat intervals (Kafka's default 2 s)


def _with_grace() -> Cluster:
    return Cluster(sessions=BrokerSessions(lost_grace_ms=GRACE_MS))


def test_the_grace_is_two_heartbeat_intervals_and_never_more_than_the_session() -> None:
    assert GRACE_MS == 2 * CONFIG.broker_heartbeat_interval_ms < SESSION_MS
    short = attrs.evolve(CONFIG, broker_session_timeout_ms=1_000)
    assert lost_connection_grace_ms(short) == 1_000


def test_a_broker_whose_connections_closed_is_fenced_after_the_grace_not_the_session() -> None:
    cluster = _with_grace()
    cluster.start(1, 2)
    cluster.add_topic("t", [1, 2])
    cluster.heartbeat(1)
    cluster.sessions.connection_lost(1, cluster.now_ms)
    lost_at = cluster.now_ms
    assert next_fence_deadline_ms(cluster.image, cluster.sessions, SESSION_MS) == \
        lost_at + GRACE_MS + 1
    cluster.advance(GRACE_MS)
    cluster.heartbeat(2)
    assert cluster.fence_stale().records == (), "not before the grace has run out"
    cluster.advance(1)
    cluster.heartbeat(2)
    assert cluster.fence_stale().records
    assert cluster.image.brokers[1].fenced and not cluster.image.brokers[2].fenced
    assert cluster.partition("t").leader == 2


def test_a_heartbeat_after_the_loss_gives_back_the_whole_session() -> None:
    # a live broker that lost its connection reconnects and heartbeats within the grace
    cluster = _with_grace()
    cluster.start(1)
    cluster.sessions.connection_lost(1, cluster.now_ms)
    cluster.advance(GRACE_MS // 2)
    cluster.heartbeat(1)
    cluster.advance(SESSION_MS - 1)
    assert cluster.fence_stale().records == ()
    assert not cluster.image.brokers[1].fenced


def test_a_silent_broker_with_open_connections_gets_the_whole_session() -> None:
    # paused (SIGSTOP) or partitioned: its sockets stay open, no loss is reported
    cluster = _with_grace()
    cluster.start(1)
    cluster.advance(SESSION_MS)
    assert cluster.fence_stale().records == ()
    cluster.advance(1)
    assert cluster.fence_stale().records and cluster.image.brokers[1].fenced


def test_without_a_grace_a_lost_connection_changes_nothing() -> None:
    cluster = Cluster()  # BrokerSessions() as a standby or a test builds them
    cluster.start(1)
    cluster.sessions.connection_lost(1, cluster.now_ms)
    cluster.advance(SESSION_MS)
    assert cluster.fence_stale().records == ()
