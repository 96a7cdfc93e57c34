"""The test profile: the one set of overrides every real-process test uses.

Kafka's defaults are tuned for production and make tests slow (a lagging
replica leaves the ISR after 30 s, a dead broker is fenced after 9 s, the
first consumer group waits 3 s, retention runs every 5 minutes). Every
integration, client and fault test, and the local-cluster launcher when
asked for it, applies exactly these overrides; production defaults stay
Kafka's. Ratios are kept: heartbeat < session, election timeout < fetch
timeout, so the same protocol paths run as in production, only sooner.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

__all__ = ["TEST_PROFILE_OVERRIDES"]

TEST_PROFILE_OVERRIDES: Final[Mapping[str, str]] = MappingProxyType({
    # a follower that hears nothing for 1 s starts an election (Kafka: 2 s)
    "controller.quorum.fetch.timeout.ms": "1000",
    # elections time out after a random 300-600 ms (Kafka: 1-2 s)
    "controller.quorum.election.timeout.ms": "300",
    # a resigning leader's successors back off at most 300 ms (Kafka: 1 s)
    "controller.quorum.election.backoff.max.ms": "300",
    # batches wait at most 5 ms for company while one is in flight (Kafka: 25 ms)
    "controller.quorum.append.linger.ms": "5",
    # brokers heartbeat every 0.5 s and are fenced after 2 s of silence (Kafka: 2 s / 9 s)
    "broker.heartbeat.interval.ms": "500",
    "broker.session.timeout.ms": "2000",
    # a follower that falls behind leaves the ISR after 2 s (Kafka: 30 s)
    "replica.lag.time.max.ms": "2000",
    # the first member of a group does not wait for others (Kafka: 3 s)
    "group.initial.rebalance.delay.ms": "0",
    # consumers may use sessions down to 1 s, so a killed member leaves its group sooner
    # (Kafka's minimum: 6 s)
    "group.min.session.timeout.ms": "1000",
    # offsets of empty groups are checked for expiry every 10 s (Kafka: 10 minutes)
    "offsets.retention.check.interval.ms": "10000",
    # preferred leaders are restored within a second (Kafka: every 5 minutes)
    "leader.imbalance.check.interval.seconds": "1",
    # retention runs every second (Kafka: 5 minutes)
    "log.retention.check.interval.ms": "1000",
    # metadata snapshots past the retention limit go every second (Kafka: 60 s)
    "metadata.log.cleaner.interval.ms": "1000",
})
