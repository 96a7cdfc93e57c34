"""``BrokerSessions``: the active controller's soft state about broker heartbeats.

Not in the log and not replicated: only the active controller has sessions,
and a new active controller starts every registered broker on a full session
(``reset``), as Kafka's BrokerHeartbeatManager does on activation. A broker
that heartbeats during the new controller's first session timeout therefore
never notices the failover.

Per broker: the time of its last successful heartbeat or registration, the
metadata offset it last reported (inclusive: the last record it applied) and,
while it is in controlled shutdown, the offset of the record that took its
leaderships away. Whether a broker is fenced is not kept here: the image says.

A broker whose every connection to this controller closed (a killed process's
sockets are closed by its kernel) is judged by a shorter clock: its session
expires ``lost_grace_ms`` after the loss unless it is heard from again first
(``connection_lost``; pykraft's departure from Kafka, which waits for the full
session: docs/design.md). A paused or partitioned broker keeps its
connections open and gets the whole session, as in Kafka.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

__all__ = ["BrokerSessions"]


@attrs.define
class _Session:
    last_contact_ms: int
    metadata_offset: int = -1
    # the last offset of the records that moved its leaderships away; -1: none
    controlled_shutdown_offset: int = -1
    # when its last connection closed with no contact since; None: connected or heard from
    lost_at_ms: int | None = None


class BrokerSessions:
    def __init__(self, lost_grace_ms: int | None = None) -> None:
        self._sessions: dict[int, _Session] = {}
        # None: a closed connection changes nothing (the session runs its full length)
        self._lost_grace_ms = lost_grace_ms

    def __contains__(self, broker_id: object) -> bool:
        return broker_id in self._sessions

    def __len__(self) -> int:
        return len(self._sessions)

    # -- lifecycle -------------------------------------------------------------------------

    def reset(self, broker_ids: Iterable[int], now_ms: int) -> None:
        """Activation: every registered broker gets a full session from ``now_ms``."""
        self._sessions = {broker_id: _Session(now_ms) for broker_id in broker_ids}

    def clear(self) -> None:
        """Renounce: sessions mean nothing on a standby controller."""
        self._sessions.clear()

    def remove(self, broker_id: int) -> None:
        self._sessions.pop(broker_id, None)

    def touch(self, broker_id: int, now_ms: int, offset: int = -1) -> None:
        """A successful heartbeat (or registration) at ``now_ms`` reporting ``offset``.

        Contact never moves back: a heartbeat whose operation started before a later
        heartbeat arrived (and touched the session on arrival) must not make the broker
        look silent for longer than it was."""
        session = self._sessions.get(broker_id)
        if session is None:
            self._sessions[broker_id] = _Session(now_ms, offset)
        else:
            session.last_contact_ms = max(session.last_contact_ms, now_ms)
            session.metadata_offset = offset
            if session.lost_at_ms is not None and now_ms >= session.lost_at_ms:
                session.lost_at_ms = None  # heard from since (on a new connection)

    def connection_lost(self, broker_id: int, now_ms: int) -> None:
        """Every connection ``broker_id`` heartbeat on has closed, at ``now_ms``."""
        session = self._sessions.get(broker_id)
        if session is not None and self._lost_grace_ms is not None:
            session.lost_at_ms = now_ms

    # -- expiry ----------------------------------------------------------------------------

    def is_alive(self, broker_id: int, now_ms: int, timeout_ms: int) -> bool:
        """Heard from within ``timeout_ms`` (Kafka: last contact + timeout >= now)."""
        session = self._sessions.get(broker_id)
        return session is not None and session.last_contact_ms + timeout_ms >= now_ms

    def _last_valid_ms(self, session: _Session, timeout_ms: int) -> int:
        """The last time at which ``session`` still counts as alive."""
        last = session.last_contact_ms + timeout_ms
        if session.lost_at_ms is not None and self._lost_grace_ms is not None:
            last = min(last, session.lost_at_ms + self._lost_grace_ms)
        return last

    def expired(self, now_ms: int, timeout_ms: int) -> list[int]:
        """Brokers not heard from within ``timeout_ms`` (or within the grace after their
        connections closed), longest silent first."""
        stale = [
            (s.last_contact_ms, broker_id)
            for broker_id, s in self._sessions.items()
            if self._last_valid_ms(s, timeout_ms) < now_ms
        ]
        return [broker_id for _, broker_id in sorted(stale)]

    def lost_connection(self, broker_id: int) -> bool:
        """Whether ``broker_id``'s connections closed and it has not been heard from since."""
        session = self._sessions.get(broker_id)
        return session is not None and session.lost_at_ms is not None

    def expiry_ms(self, broker_id: int, timeout_ms: int) -> int | None:
        """The first time at which ``broker_id``'s session counts as expired."""
        session = self._sessions.get(broker_id)
        return None if session is None else self._last_valid_ms(session, timeout_ms) + 1

    # -- what brokers reported ---------------------------------------------------------------

    def metadata_offset(self, broker_id: int) -> int:
        """The offset ``broker_id`` last reported; -1 if it has not heartbeaten yet."""
        session = self._sessions.get(broker_id)
        return -1 if session is None else session.metadata_offset

    def controlled_shutdown_offset(self, broker_id: int) -> int | None:
        session = self._sessions.get(broker_id)
        if session is None or session.controlled_shutdown_offset < 0:
            return None
        return session.controlled_shutdown_offset

    def set_controlled_shutdown_offset(self, broker_id: int, offset: int | None) -> None:
        """Remember (or forget, with None) where ``broker_id``'s controlled shutdown began.

        The first offset wins, as in Kafka: later heartbeats of the same
        shutdown must not push the point other brokers have to reach.
        """
        session = self._sessions.get(broker_id)
        assert session is not None, f"broker {broker_id} has no session"
        if offset is None:
            session.controlled_shutdown_offset = -1
        elif session.controlled_shutdown_offset < 0:
            session.controlled_shutdown_offset = offset

    def extend_controlled_shutdown_offset(self, broker_id: int, offset: int) -> None:
        """The records that move ``broker_id``'s leaderships away went on to ``offset``
        (a job that moved them after the shutdown began): the point moves there."""
        session = self._sessions.get(broker_id)
        if session is not None:
            session.controlled_shutdown_offset = max(session.controlled_shutdown_offset, offset)
