"""Kafka's exponential backoff (KIP-580): ``initial * 2**attempts``, capped, with jitter.

Used for retries (``retry.backoff.ms`` .. ``retry.backoff.max.ms``) and
reconnects (``reconnect.backoff.ms`` .. ``reconnect.backoff.max.ms``).
Jitter (Kafka's 0.2) keeps many clients that failed together from retrying
together; the random source is given, so tests pick it.
"""

from __future__ import annotations

import math
import random
from typing import Final

import attrs

__all__ = ["ExponentialBackoff", "NodeBackoff"]

_JITTER: Final = 0.2


@attrs.frozen
class ExponentialBackoff:
    initial_ms: int
    max_ms: int
    jitter: float = _JITTER

    def delay_ms(self, attempts: int, rng: random.Random | None = None) -> float:
        """The wait before retry number ``attempts + 1`` (``attempts`` failures so far)."""
        if self.initial_ms <= 0:
            return 0.0
        ceiling = max(self.max_ms, self.initial_ms)
        # the exponent stops growing once the cap is reached (no float overflow)
        limit = math.ceil(math.log2(ceiling / self.initial_ms)) if ceiling > self.initial_ms else 0
        term = self.initial_ms * 2.0 ** min(max(attempts, 0), limit)
        if rng is not None and self.jitter and self.max_ms > self.initial_ms:
            term *= rng.uniform(1 - self.jitter, 1 + self.jitter)
        return min(term, float(ceiling))


@attrs.define
class NodeBackoff:
    """When each node may be tried again after failed connection attempts."""

    policy: ExponentialBackoff
    rng: random.Random
    _failures: dict[str, int] = attrs.field(factory=dict)
    _not_before_ms: dict[str, float] = attrs.field(factory=dict)

    def failed(self, node: str, now_ms: float) -> float:
        """Count a failed attempt; returns the time the node may be tried again."""
        failures = self._failures.get(node, 0)
        self._failures[node] = failures + 1
        ready = now_ms + self.policy.delay_ms(failures, self.rng)
        self._not_before_ms[node] = ready
        return ready

    def succeeded(self, node: str) -> None:
        self._failures.pop(node, None)
        self._not_before_ms.pop(node, None)

    def wait_ms(self, node: str, now_ms: float) -> float:
        """How long until ``node`` may be tried (0: now)."""
        return max(0.0, self._not_before_ms.get(node, 0.0) - now_ms)
