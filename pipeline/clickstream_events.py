"""Click events of the clickstream pipeline: their wire form and a seeded generator of them.

Pure: neither pykraft nor Spark. ``clickstream_generate`` produces the records with pykraft's
client library; ``clickstream_frames`` parses them in Spark against ``EVENT_FIELDS``.

An event is one JSON object in UTF-8, keyed by its user::

    {"event_id": "s7-000042", "user": "u017", "page": "/cart", "action": "click",
     "ts": 1764393000123}

``ts`` is when the event happened, in epoch milliseconds, and the record's Kafka timestamp is
the same time: a read by ``startingTimestamp``/``endingTimestamp`` selects events by when they
happened. Events are generated in time order, so each partition's timestamps never go down;
that is what makes a ListOffsets-by-time range hold exactly the events of that time range.

Asked for malformed events, the generator replaces some (seeded positions) by records the
parser must reject, one of each ``Flaw`` in turn.
"""

from __future__ import annotations

import enum
import json
import random

import attrs

__all__ = [
    "ACTIONS",
    "EVENT_FIELDS",
    "PAGES",
    "ClickEvent",
    "ClickRecord",
    "Flaw",
    "Topics",
    "plan_events",
]

PAGES = ("/", "/products", "/product/42", "/cart", "/checkout")
# a shop's funnel: most visits see the front page, few reach the checkout
PAGE_WEIGHTS = (30, 25, 20, 15, 10)
ACTIONS = ("view", "click")
# every field is required: a record missing one, or with one of the wrong type, is dead-lettered
EVENT_FIELDS = ("event_id", "user", "page", "action", "ts")


@attrs.frozen(kw_only=True)
class Topics:
    """The pipeline's three topics: raw events in, rejected events, per-minute aggregates out."""

    events: str = "clicks"
    dead_letters: str = "clicks-dead-letters"
    aggregates: str = "clicks-per-minute"

    def names(self) -> tuple[str, str, str]:
        return (self.events, self.dead_letters, self.aggregates)


class Flaw(enum.Enum):
    """How a malformed record is broken (each is a mistake real producers make)."""

    NOT_JSON = "not-json"  # a form-encoded body sent to the JSON topic
    TRUNCATED = "truncated"  # a JSON object cut off mid-way
    NO_PAGE = "no-page"  # a required field left out
    TEXT_TIME = "text-time"  # the time as text instead of epoch milliseconds


@attrs.frozen(kw_only=True)
class ClickEvent:
    event_id: str
    user: str
    page: str
    action: str
    ts_ms: int

    def as_dict(self) -> dict[str, str | int]:
        return {"event_id": self.event_id, "user": self.user, "page": self.page,
                "action": self.action, "ts": self.ts_ms}

    def to_json(self) -> bytes:
        return json.dumps(self.as_dict(), separators=(",", ":")).encode()


@attrs.frozen(kw_only=True)
class ClickRecord:
    """One record to produce; ``event`` is None when the record is malformed (``flaw`` says how)."""

    key: bytes
    value: bytes
    timestamp_ms: int
    event: ClickEvent | None
    flaw: Flaw | None = None


def _malformed(event: ClickEvent, flaw: Flaw) -> bytes:
    fields = event.as_dict()
    if flaw is Flaw.NOT_JSON:
        return f"user={event.user}&page={event.page}&action={event.action}".encode()
    if flaw is Flaw.TRUNCATED:
        text = event.to_json()
        return text[: len(text) // 2]
    if flaw is Flaw.NO_PAGE:
        del fields["page"]
    else:
        fields["ts"] = "yesterday"
    return json.dumps(fields, separators=(",", ":")).encode()


def plan_events(count: int, *, seed: int, start_ms: int, span_ms: int, malformed: int = 0,
                users: int = 50) -> list[ClickRecord]:
    """``count`` records with times in ``[start_ms, start_ms + span_ms)``, in time order.

    ``malformed`` of them (at seeded positions) are broken, cycling through ``Flaw``. The
    same arguments give the same records; event ids carry the seed, so runs with different
    seeds never share an id.
    """
    if not 0 <= malformed <= count:
        raise ValueError(f"malformed must be between 0 and count ({count}), got {malformed}")
    if span_ms <= 0:
        raise ValueError(f"span_ms must be positive, got {span_ms}")
    rng = random.Random(seed)
    times = sorted(rng.randrange(start_ms, start_ms + span_ms) for _ in range(count))
    broken = dict(zip(sorted(rng.sample(range(count), malformed)), range(malformed), strict=True))
    flaws = list(Flaw)
    records = []
    for index, ts_ms in enumerate(times):
        event = ClickEvent(event_id=f"s{seed}-{index:06d}", user=f"u{rng.randrange(users):03d}",
                           page=rng.choices(PAGES, PAGE_WEIGHTS)[0],
                           action=rng.choices(ACTIONS, (70, 30))[0], ts_ms=ts_ms)
        key = event.user.encode()
        if index in broken:
            flaw = flaws[broken[index] % len(flaws)]
            records.append(ClickRecord(key=key, value=_malformed(event, flaw), timestamp_ms=ts_ms,
                                       event=None, flaw=flaw))
        else:
            records.append(ClickRecord(key=key, value=event.to_json(), timestamp_ms=ts_ms,
                                       event=event))
    return records
