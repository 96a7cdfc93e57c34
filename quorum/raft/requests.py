"""Outbound requests in flight: correlation handles, timeouts and backoff.

The core gives each request it sends a fresh ``request_id``; the driver maps
it to a wire correlation id and hands the response back with the same id.
At most one request is in flight to each destination (a follower must never
have two fetches in flight: the same offsets could be written twice). A
response whose id is not the one in flight (timed out, superseded, or sent
before a state change) is dropped.
"""

from __future__ import annotations

import attrs

__all__ = ["InFlight", "RequestTracker"]


@attrs.frozen(kw_only=True)
class InFlight:
    request_id: int
    destination: int
    kind: type
    sent_ms: int
    deadline_ms: int


class RequestTracker:
    def __init__(self, *, request_timeout_ms: int, retry_backoff_ms: int) -> None:
        self._request_timeout_ms = request_timeout_ms
        self._retry_backoff_ms = retry_backoff_ms
        self._next_id = 1
        self._in_flight: dict[int, InFlight] = {}
        self._backoff_until: dict[int, int] = {}

    def can_send(self, destination: int, now_ms: int) -> bool:
        if destination in self._in_flight:
            return False
        return self._backoff_until.get(destination, now_ms) <= now_ms

    def sent(self, destination: int, kind: type, now_ms: int) -> int:
        assert destination not in self._in_flight, f"a request to {destination} is in flight"
        request_id = self._next_id
        self._next_id += 1
        self._in_flight[destination] = InFlight(
            request_id=request_id,
            destination=destination,
            kind=kind,
            sent_ms=now_ms,
            deadline_ms=now_ms + self._request_timeout_ms,
        )
        self._backoff_until.pop(destination, None)
        return request_id

    def in_flight_to(self, destination: int) -> InFlight | None:
        return self._in_flight.get(destination)

    def take_response(self, source: int, request_id: int, kind: type) -> InFlight | None:
        """The matching request, no longer in flight; None if the response is unexpected."""
        pending = self._in_flight.get(source)
        if pending is None or pending.request_id != request_id or pending.kind is not kind:
            return None
        del self._in_flight[source]
        return pending

    def back_off(self, destination: int, now_ms: int) -> None:
        self._backoff_until[destination] = now_ms + self._retry_backoff_ms

    def fail(self, destination: int, now_ms: int) -> InFlight | None:
        """The connection to ``destination`` failed: forget its request and back off."""
        self.back_off(destination, now_ms)
        return self._in_flight.pop(destination, None)

    def expire(self, now_ms: int) -> list[InFlight]:
        """Requests whose timeout passed; each destination then backs off."""
        for destination in [d for d, until in self._backoff_until.items() if until <= now_ms]:
            del self._backoff_until[destination]
        expired = [r for r in self._in_flight.values() if r.deadline_ms <= now_ms]
        for request in expired:
            del self._in_flight[request.destination]
            self.back_off(request.destination, now_ms)
        return expired

    def reset(self) -> None:
        """A new election state: nothing sent before is still expected."""
        self._in_flight.clear()
        self._backoff_until.clear()

    def next_deadline_ms(self) -> int | None:
        deadlines = [r.deadline_ms for r in self._in_flight.values()]
        deadlines += self._backoff_until.values()
        return min(deadlines) if deadlines else None
