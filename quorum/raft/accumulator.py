"""Adaptive batching of the leader's appends.

Design (ARCHITECTURE.md section 3): when nothing the leader wrote is still
uncommitted, a proposal is appended at once, so a lone writer pays no linger;
while a batch is in flight, proposals gather until it commits or until
``append_linger_ms`` after the first of them, so many writers share a batch
(and one fsync). It lives in the core, not the driver, because "in flight"
is a fact about the high watermark and the linger is one more deadline of the
core's ``next_deadline_ms``.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["RECORD_OVERHEAD_BYTES", "Accumulator"]

# a generous bound on a record's framing inside a batch (length, deltas, key)
RECORD_OVERHEAD_BYTES = 24


class Accumulator:
    def __init__(
        self, *, linger_ms: int, max_batch_bytes: int, max_batch_records: int = 1 << 31
    ) -> None:
        self._linger_ms = linger_ms
        self._max_batch_bytes = max_batch_bytes
        self._max_batch_records = max_batch_records
        # one entry per proposal: a proposal is never split across batches (below)
        self._pending: list[Sequence[bytes]] = []
        self._pending_count = 0
        self._pending_bytes = 0
        self._first_at_ms: int | None = None

    @property
    def pending_count(self) -> int:
        """Records waiting (not proposals)."""
        return self._pending_count

    def add(self, payloads: Sequence[bytes], now_ms: int) -> None:
        if not self._pending:
            self._first_at_ms = now_ms
        self._pending.append(payloads)
        self._pending_count += len(payloads)
        self._pending_bytes += sum(len(p) + RECORD_OVERHEAD_BYTES for p in payloads)

    def deadline_ms(self) -> int | None:
        if self._first_at_ms is None:
            return None
        return self._first_at_ms + self._linger_ms

    def is_due(self, now_ms: int, *, in_flight: bool) -> bool:
        if not self._pending:
            return False
        deadline = self.deadline_ms()
        return (
            not in_flight
            or (deadline is not None and now_ms >= deadline)
            or self._pending_bytes >= self._max_batch_bytes
            or self._pending_count >= self._max_batch_records
        )

    def drain(self) -> list[list[bytes]]:
        """The pending payloads in order, cut into batches of at most the max batch size
        and record count.

        Cuts fall only between proposals: a batch is appended, replicated and
        committed whole (the high watermark moves at batch ends), so a proposal
        in one batch is atomic for every state machine. Only a proposal larger
        than a batch by itself is cut, at record boundaries; the controller
        frames such results as a metadata transaction (quorum.controller.
        operations), which readers apply whole.
        """
        chunks: list[list[bytes]] = []
        current: list[bytes] = []
        size = 0
        max_bytes, max_records = self._max_batch_bytes, self._max_batch_records
        for proposal in self._pending:
            cost = sum(len(p) + RECORD_OVERHEAD_BYTES for p in proposal)
            if current and (
                size + cost > max_bytes or len(current) + len(proposal) > max_records
            ):
                chunks.append(current)
                current, size = [], 0
            if cost <= max_bytes and len(proposal) <= max_records:
                current.extend(proposal)
                size += cost
                continue
            for payload in proposal:  # too large for one batch: cut at record boundaries
                record_cost = len(payload) + RECORD_OVERHEAD_BYTES
                if current and (size + record_cost > max_bytes or len(current) >= max_records):
                    chunks.append(current)
                    current, size = [], 0
                current.append(payload)
                size += record_cost
        if current:
            chunks.append(current)
        self._pending, self._pending_count, self._pending_bytes = [], 0, 0
        self._first_at_ms = None
        return chunks
