"""Named deadlines: the earliest due first; a rescheduled or cancelled key fires never twice."""

from __future__ import annotations

from broker.group.timers import HeartbeatTimer, JoinTimer, RetentionTimer, Timers


def test_due_timers_pop_in_deadline_order_and_only_when_due() -> None:
    timers = Timers()
    timers.schedule(JoinTimer("g"), 30)
    timers.schedule(HeartbeatTimer("g", "m"), 10)
    timers.schedule(RetentionTimer(0), 20)
    assert timers.next_deadline_ms() == 10
    assert timers.pop_due(5) is None
    assert [timers.pop_due(25), timers.pop_due(25), timers.pop_due(25)] == [
        HeartbeatTimer("g", "m"), RetentionTimer(0), None,
    ]
    assert timers.next_deadline_ms() == 30 and len(timers) == 1


def test_rescheduling_moves_a_timer_and_cancelling_removes_it() -> None:
    timers = Timers()
    timers.schedule(HeartbeatTimer("g", "m"), 10)
    timers.schedule(HeartbeatTimer("g", "m"), 50)  # a heartbeat pushed the session out
    timers.schedule(JoinTimer("g"), 20)
    timers.cancel(JoinTimer("g"))
    assert timers.pop_due(40) is None
    assert timers.deadline_of(HeartbeatTimer("g", "m")) == 50
    assert timers.pop_due(50) == HeartbeatTimer("g", "m")
    assert timers.next_deadline_ms() is None
