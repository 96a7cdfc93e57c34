"""``LifecycleTimes``: how long a broker waited for the answers to its registrations and
heartbeats, and how many got none.

The broker's view is the one that matters: a registration that the
controller answered after the broker gave up is one the broker never saw.
So the lifecycle loop times each request from sending to its answer (any
answer, NOT_CONTROLLER included) and counts the ones that got none, by
reason: ``timeout`` (no answer within the request's wait), ``leader_moved``
(the quorum's leader moved to another node meanwhile: the request goes there
at once) or ``connection`` (refused or lost).

``/metrics`` of a broker shows them as::

    pykraft_broker_lifecycle_request_time_ms{request="BrokerHeartbeat",quantile="0.99"}
    pykraft_broker_lifecycle_request_time_ms_max{request="BrokerRegistration",window="all"}
    pykraft_broker_lifecycle_requests_unanswered_total{request=...,reason="timeout"}

``bench.bench_scale`` reads them after a full restart. Every sample is also
kept (at most ``MAX_SAMPLES``, the oldest dropped first) for the bench's
simulated brokers, which run in its own process.
"""

from __future__ import annotations

import collections
import time
from collections import deque
from typing import Final

import attrs

from quorum.metrics import EventTimes, EventTimesSummary, Family, Sample, event_times_families

__all__ = ["MAX_SAMPLES", "UNANSWERED_REASONS", "LifecycleTimes"]

MAX_SAMPLES: Final = 10_000
UNANSWERED_REASONS: Final = ("timeout", "leader_moved", "connection")


@attrs.define
class _Kind:
    times: EventTimes = attrs.Factory(lambda: EventTimes(1024))
    unanswered: collections.Counter[str] = attrs.Factory(collections.Counter)


class LifecycleTimes:
    def __init__(self) -> None:
        self._kinds: dict[str, _Kind] = {}
        # (wall-clock time, request kind, ms): every answer's wait, the newest last
        self.samples: deque[tuple[float, str, float]] = deque(maxlen=MAX_SAMPLES)

    def answered(self, kind: str, ms: float, now_s: float) -> None:
        """A request of ``kind`` ("BrokerRegistration", ...) was answered after ``ms``."""
        self._kind(kind).times.record(ms, now_s)
        self.samples.append((time.time(), kind, ms))

    def unanswered(self, kind: str, reason: str) -> None:
        """A request got no answer: ``reason`` is one of ``UNANSWERED_REASONS``."""
        assert reason in UNANSWERED_REASONS, reason
        self._kind(kind).unanswered[reason] += 1

    def summaries(self, now_s: float) -> dict[str, EventTimesSummary]:
        return {kind: k.times.summary(now_s) for kind, k in sorted(self._kinds.items())}

    def unanswered_count(self, kind: str, reason: str) -> int:
        found = self._kinds.get(kind)
        return 0 if found is None else found.unanswered[reason]

    def families(self, now_s: float) -> list[Family]:
        by_kind: dict[tuple[tuple[str, str], ...], EventTimesSummary] = {
            (("request", kind),): summary for kind, summary in self.summaries(now_s).items()
        }
        unanswered = tuple(
            Sample({"request": kind, "reason": reason}, k.unanswered[reason])
            for kind, k in sorted(self._kinds.items()) for reason in UNANSWERED_REASONS
        )
        return [
            *event_times_families(
                "pykraft_broker_lifecycle_request_time_ms",
                "Time a broker waited for the controller's answer to its registration or "
                "heartbeat, in ms.", by_kind,
            ),
            Family("pykraft_broker_lifecycle_requests_unanswered_total",
                   "Registrations and heartbeats that got no answer, by reason.",
                   unanswered, type="counter"),
        ]

    def _kind(self, kind: str) -> _Kind:
        found = self._kinds.get(kind)
        if found is None:
            found = self._kinds[kind] = _Kind()
        return found
