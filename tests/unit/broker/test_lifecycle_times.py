"""A broker's lifecycle answer times: what the loop records and what /metrics shows."""

from __future__ import annotations

from broker.lifecycle_times import LifecycleTimes
from quorum.metrics import parse_samples, render


def test_answers_are_timed_and_requests_without_one_counted_by_reason() -> None:
    times = LifecycleTimes()
    for ms in (2.0, 4.0, 900.0):
        times.answered("BrokerHeartbeat", ms, now_s=10.0)
    times.answered("BrokerRegistration", 1500.0, now_s=11.0)
    times.unanswered("BrokerRegistration", "timeout")
    times.unanswered("BrokerHeartbeat", "connection")
    summaries = times.summaries(12.0)
    assert summaries["BrokerHeartbeat"].count == 3
    assert summaries["BrokerHeartbeat"].max_ms == 900.0
    assert summaries["BrokerRegistration"].max_ms == 1500.0
    assert times.unanswered_count("BrokerRegistration", "timeout") == 1
    assert list(times.samples)[-1][1:] == ("BrokerRegistration", 1500.0)
    samples = parse_samples(render(times.families(12.0)))
    assert samples[
        'pykraft_broker_lifecycle_request_time_ms_count{request="BrokerHeartbeat"}'
    ] == 3
    assert samples[
        'pykraft_broker_lifecycle_request_time_ms_max{request="BrokerRegistration",window="all"}'
    ] == 1500.0
    assert samples['pykraft_broker_lifecycle_requests_unanswered_total'
                   '{request="BrokerHeartbeat",reason="connection"}'] == 1
