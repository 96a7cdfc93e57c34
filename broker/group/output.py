"""What the group coordinator asks its shell to do: the contract in types.

Every public call of ``GroupCoordinator`` returns one ``CoordinatorOutput``:

1. ``answers``: send each response to the request that carried ``token``.
   Every token the shell passes in is answered exactly once, now or in a
   later output (a JoinGroup waits for the join phase, a SyncGroup for the
   leader's assignment, a commit for its records to be committed).
2. ``appends``: append each batch of records to ``__consumer_offsets``
   partition ``partition`` with acks=all semantics, in the order given; then
   call ``append_committed(append_id, ...)`` once the high watermark passes
   the batch, or ``append_failed(append_id, error, ...)`` with the append's
   Kafka error (NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS, ...).
3. ``next_deadline_ms``: call ``poll(now_ms)`` no later than this (None: no
   timer is armed).
"""

from __future__ import annotations

from collections.abc import Hashable

import attrs

from broker.group.records import OffsetsRecord

__all__ = ["Answer", "Append", "CoordinatorOutput"]


@attrs.frozen
class Answer:
    """The response to the request the shell passed in with ``token``."""

    token: Hashable
    response: object  # a quorum.wire.messages response, encoded at the request's version


@attrs.frozen
class Append:
    """Records for one ``__consumer_offsets`` partition, appended as one batch."""

    append_id: int
    partition: int
    records: tuple[OffsetsRecord, ...]


@attrs.frozen
class CoordinatorOutput:
    answers: tuple[Answer, ...] = ()
    appends: tuple[Append, ...] = ()
    next_deadline_ms: int | None = None
