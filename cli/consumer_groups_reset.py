"""``kraft consumer-groups --reset-offsets``: where each partition's offset goes.

Kafka's ``prepareOffsetsToReset`` and ``checkOffsetsRange``: a scenario
(``--to-earliest``, ``--to-offset N``...) picks the new offsets of the
partitions in scope (``--all-topics``: the group's committed partitions;
``--topic t`` or ``t:0,1``); explicit offsets are clamped into
[log start, log end] with a warning; a timestamp with no record at or after
it falls back to the log end offset. Date and duration parsing is pure and
tested on its own.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from typing import Final

import attrs

from broker.client import Admin, OffsetSpec, TopicPartition
from cli.consumer_groups_render import Output, tp_name

__all__ = [
    "ResetScenario",
    "UsageError",
    "clamp_offsets",
    "export_csv",
    "parse_datetime_ms",
    "parse_duration_ms",
    "parse_topic_args",
    "partitions_of",
    "prepare_offsets",
    "read_reset_plan",
]

SCENARIOS: Final = ("to-offset", "shift-by", "to-datetime", "by-duration", "to-earliest",
                    "to-latest", "to-current", "from-file")
_DATETIME: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{3})(Z|[+-]\d{2}(?::?\d{2})?)?")
_DURATION: Final = re.compile(
    r"([-+]?)P(?:([-+]?\d+)D)?(?:T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?",
    re.IGNORECASE)


class UsageError(Exception):
    """Kafka's IllegalArgumentException / printUsageAndExit: a message, stderr, status 1."""


@attrs.frozen(kw_only=True)
class ResetScenario:
    """The one scenario given (``name`` one of ``SCENARIOS``) and its value."""

    name: str
    value: str | int | None = None


def parse_datetime_ms(text: str) -> int:
    """Kafka's ``Utils.getDateTime``: ``YYYY-MM-DDTHH:mm:SS.sss`` with an optional zone
    (``Z``, ``+hh``, ``+hh:mm``, ``+hhmm``); no zone means UTC."""
    match = _DATETIME.fullmatch(text)
    if "T" not in text:
        raise UsageError("Error parsing timestamp. It does not contain a 'T' according to "
                         "ISO8601 format")
    if match is None:
        raise UsageError(f'Unparseable date: "{text}"')
    year, month, day, hour, minute, second, millis = (int(g) for g in match.groups()[:7])
    zone = match.group(8) or "Z"
    offset = dt.timedelta(0)
    if zone != "Z":
        digits = zone[1:].replace(":", "")
        offset = dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:] or 0))
        offset = -offset if zone[0] == "-" else offset
    try:
        moment = dt.datetime(year, month, day, hour, minute, second, millis * 1000,
                             tzinfo=dt.timezone(offset))
    except ValueError as exc:
        raise UsageError(f'Unparseable date: "{text}"') from exc
    return int(moment.timestamp() * 1000)


def parse_duration_ms(text: str) -> int:
    """Java's ``Duration.parse`` (``PnDTnHnMn.nS``) in milliseconds."""
    match = _DURATION.fullmatch(text)
    if match is None or not any(match.groups()[1:5]) or text.upper().endswith("T"):
        raise UsageError(f"Text cannot be parsed to a Duration: {text}")
    sign, days, hours, minutes, seconds, fraction = match.groups()
    total = dt.timedelta(days=int(days or 0), hours=int(hours or 0), minutes=int(minutes or 0),
                         seconds=int(seconds or 0))
    millis = int(total.total_seconds() * 1000)
    if fraction:
        part = int(fraction.ljust(9, "0")[:3])
        millis += -part if (seconds or "").startswith("-") else part
    return -millis if sign == "-" else millis


def parse_topic_args(topics: Sequence[str]) -> tuple[list[str], list[TopicPartition]]:
    """Kafka's ``topic`` / ``topic:0,1,2`` arguments: the bare topics and the named partitions."""
    bare, named = [], []
    for arg in topics:
        if ":" not in arg:
            bare.append(arg)
            continue
        parts = arg.split(":")
        if len(parts) != 2:
            raise UsageError(f"Invalid topic arg '{arg}', expected topic name and partitions")
        for text in parts[1].split(","):
            try:
                named.append(TopicPartition(parts[0], int(text)))
            except ValueError:
                raise UsageError(f"Invalid partition '{text}' specified in topic arg "
                                 f"'{arg}''") from None
    return bare, named


async def partitions_of(admin: Admin, topics: Sequence[str], timeout_ms: int
                        ) -> list[TopicPartition]:
    """Every partition of ``topics`` (raises for an unknown topic)."""
    if not topics:
        return []
    described = await admin.describe_topics(list(topics), timeout_ms=timeout_ms)
    return [TopicPartition(name, p.partition) for name, d in described.items()
            for p in d.partitions]


async def _offsets(admin: Admin, partitions: Sequence[TopicPartition], spec: int,
                   timeout_ms: int) -> dict[TopicPartition, int | None]:
    if not partitions:
        return {}
    found = await admin.list_offsets(dict.fromkeys(partitions, spec), timeout_ms=timeout_ms)
    return {tp: None if found.get(tp) is None else found[tp].offset  # type: ignore[union-attr]
            for tp in partitions}


async def clamp_offsets(admin: Admin, wanted: Mapping[TopicPartition, int], timeout_ms: int,
                   output: Output) -> dict[TopicPartition, int]:
    """Kafka's ``checkOffsetsRange``: into [log start, log end], warning when moved."""
    starts = await _offsets(admin, list(wanted), OffsetSpec.EARLIEST, timeout_ms)
    ends = await _offsets(admin, list(wanted), OffsetSpec.LATEST, timeout_ms)
    out = {}
    for tp, offset in wanted.items():
        end, start = ends.get(tp), starts.get(tp)
        if end is not None and offset > end:
            output.err.append(f"WARN New offset ({offset}) is higher than latest offset for topic "
                              f"partition {tp_name(tp)}. Value will be set to {end}\n")
            offset = end
        elif start is not None and offset < start:
            output.err.append(f"WARN New offset ({offset}) is lower than earliest offset for topic "
                              f"partition {tp_name(tp)}. Value will be set to {start}\n")
            offset = start
        out[tp] = offset
    return out


async def _known(admin: Admin, partitions: Sequence[TopicPartition], spec: int, what: str,
                 timeout_ms: int) -> dict[TopicPartition, int]:
    found = await _offsets(admin, partitions, spec, timeout_ms)
    for tp in partitions:
        if found.get(tp) is None:
            raise UsageError(f"Error getting {what} of topic partition: {tp_name(tp)}")
    return {tp: offset for tp, offset in found.items() if offset is not None}


async def _by_timestamp(admin: Admin, partitions: Sequence[TopicPartition], timestamp_ms: int,
                        timeout_ms: int, output: Output) -> dict[TopicPartition, int]:
    found = await _offsets(admin, partitions, timestamp_ms, timeout_ms)
    empty = [tp for tp in partitions if found.get(tp) is None]
    for tp in empty:
        output.out.append(f"\nWarn: Partition {tp.partition} from topic {tp.topic} is empty. "
                          "Falling back to latest known offset.\n")
    ends = await _known(admin, empty, OffsetSpec.LATEST, "ending offset", timeout_ms)
    return {tp: ends[tp] if found.get(tp) is None else found[tp]  # type: ignore[misc]
            for tp in partitions}


async def prepare_offsets(
    admin: Admin, scenario: ResetScenario, partitions: Sequence[TopicPartition],
    committed: Mapping[TopicPartition, int], timeout_ms: int, output: Output, now_ms: int,
) -> dict[TopicPartition, int]:
    """The new offset of each partition in scope under ``scenario`` (Kafka's order of checks)."""
    name, value = scenario.name, scenario.value
    if name == "to-offset":
        assert isinstance(value, int)
        return await clamp_offsets(admin, dict.fromkeys(partitions, value), timeout_ms, output)
    if name == "to-earliest":
        return await _known(admin, partitions, OffsetSpec.EARLIEST, "starting offset", timeout_ms)
    if name == "to-latest":
        return await _known(admin, partitions, OffsetSpec.LATEST, "ending offset", timeout_ms)
    if name == "shift-by":
        assert isinstance(value, int)
        wanted = {}
        for tp in partitions:
            if tp not in committed:
                raise UsageError(f"Cannot shift offset for partition {tp_name(tp)} since there "
                                 "is no current committed offset")
            wanted[tp] = committed[tp] + value
        return await clamp_offsets(admin, wanted, timeout_ms, output)
    if name in ("to-datetime", "by-duration"):
        assert isinstance(value, str)
        timestamp = (parse_datetime_ms(value) if name == "to-datetime"
                     else now_ms - parse_duration_ms(value))
        return await _by_timestamp(admin, partitions, timestamp, timeout_ms, output)
    assert name == "to-current", name
    without = [tp for tp in partitions if tp not in committed]
    ends = await _known(admin, without, OffsetSpec.LATEST, "ending offset", timeout_ms)
    return {tp: committed[tp] if tp in committed else ends[tp] for tp in partitions}


def read_reset_plan(text: str, groups: Sequence[str]) -> dict[str, dict[TopicPartition, int]]:
    """A ``--from-file`` CSV: ``topic,partition,offset`` lines for a single ``--group``, else
    ``group,topic,partition,offset`` (what ``--export`` writes)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    single = len(groups) == 1 and bool(lines) and len(lines[0].split(",")) == 3
    plan: dict[str, dict[TopicPartition, int]] = {}
    for line in lines:
        fields = line.split(",")
        try:
            if single:
                group, (topic, partition, offset) = groups[0], fields
            else:
                group, topic, partition, offset = fields
            plan.setdefault(group, {})[TopicPartition(topic, int(partition))] = int(offset)
        except ValueError:
            raise UsageError(f"Invalid reset plan line: '{line}'") from None
    return plan


def export_csv(plan: Mapping[str, Mapping[TopicPartition, int]], *, single: bool) -> str:
    """``--export``: the plan as CSV (without the group column for a single ``--group``)."""
    return "".join(
        (f"{tp.topic},{tp.partition},{offset}\n" if single
         else f"{group},{tp.topic},{tp.partition},{offset}\n")
        for group in sorted(plan) for tp, offset in sorted(plan[group].items()))
