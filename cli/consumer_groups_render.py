"""``kraft consumer-groups``' output: Kafka's ``ConsumerGroupCommand`` layouts as text.

Pure functions from described groups, committed offsets and log end offsets
to the exact text Kafka's tool prints: its printf formats (each row
preceded by a newline, left-aligned columns at least 15 wide, ``-`` for a
missing value), its notes on stderr ("Consumer group 'g' has no active
members.") and its errors on stdout ("\\nError: ..."). An ``Output`` holds
both streams so that the command writes them and the tests compare them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import attrs

from broker.client import ConsumerGroupDescription, GroupListing, TopicPartition

__all__ = [
    "MISSING",
    "Output",
    "PartitionRow",
    "delete_groups_text",
    "delete_offsets_text",
    "list_text",
    "members_text",
    "offset_rows",
    "offsets_text",
    "reset_plan_text",
    "state_text",
    "tp_name",
]

MISSING = "-"  # Kafka's MISSING_COLUMN_VALUE
_REBALANCING = frozenset({"PreparingRebalance", "CompletingRebalance", "Assigning",
                          "Reconciling"})


@attrs.define
class Output:
    """What a step prints: ``out`` for stdout, ``err`` for stderr; ``failed`` when it printed
    an error (the command then exits with status 1)."""

    out: list[str] = attrs.field(factory=list)
    err: list[str] = attrs.field(factory=list)
    failed: bool = False

    def error(self, message: str) -> None:
        self.out.append(f"\nError: {message}\n")
        self.failed = True

    def extend(self, other: Output) -> None:
        self.out += other.out
        self.err += other.err
        self.failed = self.failed or other.failed


@attrs.frozen(kw_only=True)
class PartitionRow:
    group: str
    topic: str | None
    partition: int | None
    offset: int | None
    log_end_offset: int | None
    consumer_id: str
    host: str
    client_id: str

    @property
    def lag(self) -> int | None:
        if self.offset is None or self.offset == -1 or self.log_end_offset is None:
            return None
        return self.log_end_offset - self.offset


def tp_name(tp: TopicPartition) -> str:
    """Java's ``TopicPartition.toString``: ``topic-partition``."""
    return f"{tp.topic}-{tp.partition}"


def _cell(value: object | None) -> str:
    return MISSING if value is None else str(value)


def _should_print(output: Output, group: str, state: str, rows: int) -> bool:
    """Kafka's ``shouldPrintMemberState``: the state's note or error, and whether rows follow."""
    if state == "Dead":
        output.error(f"Consumer group '{group}' does not exist.")
    elif state == "Empty":
        output.err.append(f"\nConsumer group '{group}' has no active members.\n")
    elif state in _REBALANCING:
        output.err.append(f"\nWarning: Consumer group '{group}' is rebalancing.\n")
    return state != "Dead" and rows > 0


def offset_rows(
    description: ConsumerGroupDescription, committed: Mapping[TopicPartition, int],
    log_end_offsets: Mapping[TopicPartition, int],
) -> list[PartitionRow]:
    """Kafka's ``collectGroupsOffsets``: the members' partitions (members with the most
    partitions first), then committed partitions no member holds, with ``-`` as consumer."""
    group = description.group_id
    rows: list[PartitionRow] = []
    assigned: set[TopicPartition] = set()

    def row(tp: TopicPartition, consumer_id: str, host: str, client_id: str) -> PartitionRow:
        return PartitionRow(group=group, topic=tp.topic, partition=tp.partition,
                            offset=committed.get(tp), log_end_offset=log_end_offsets.get(tp),
                            consumer_id=consumer_id, host=host, client_id=client_id)

    members = sorted((m for m in description.members if m.assignment),
                     key=lambda m: -len(m.assignment))
    for member in members:
        assigned.update(member.assignment)
        rows += [row(tp, member.member_id, member.host, member.client_id)
                 for tp in sorted(set(member.assignment))]
    rows += [row(tp, MISSING, MISSING, MISSING) for tp in sorted(set(committed) - assigned)]
    return rows


def offsets_text(output: Output, group: str, state: str, rows: Sequence[PartitionRow]) -> None:
    """The default ``--describe`` (``--offsets``) table of one group."""
    if not _should_print(output, group, state, len(rows)):
        return
    widths = [max([15, *(len(r.group) for r in rows)]),
              max([15, *(len(_cell(r.topic)) for r in rows)]), 10, 15, 15, 15,
              max([15, *(len(r.consumer_id) for r in rows)]),
              max([15, *(len(r.host) for r in rows)])]
    lines = [("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
              "CONSUMER-ID", "HOST", "CLIENT-ID")]
    lines += [(r.group, _cell(r.topic), _cell(r.partition), _cell(r.offset),
               _cell(r.log_end_offset), _cell(r.lag), r.consumer_id, r.host, r.client_id)
              for r in rows]
    output.out.append("".join("\n" + _padded(cells, widths) for cells in lines) + "\n")


def _padded(cells: Sequence[str], widths: Sequence[int]) -> str:
    """Java's ``%-Ns`` for each width, one space between, the last cell unpadded."""
    return " ".join([c.ljust(w) for c, w in zip(cells, widths, strict=False)]
                    + list(cells[len(widths):]))


def _assignment_text(assignment: Iterable[TopicPartition]) -> str:
    by_topic: dict[str, list[int]] = {}
    for tp in assignment:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    if not by_topic:
        return MISSING
    return ", ".join(sorted(f"{topic}({','.join(str(p) for p in sorted(parts))})"
                            for topic, parts in by_topic.items()))


def members_text(output: Output, description: ConsumerGroupDescription, *,
                 verbose: bool) -> None:
    """``--describe --members`` of one group; its header is printed even when no member is
    (as Kafka's is)."""
    group, members = description.group_id, description.members
    shown = _should_print(output, group, description.state, len(members))
    listed = members if shown else ()
    with_instance = any(m.group_instance_id for m in listed)
    widths = [max([15, len(group)]), max([15, *(len(m.member_id) for m in listed)])]
    if with_instance:
        widths.append(max([17, *(len(m.group_instance_id or "") for m in listed)]))
    widths += [max([15, *(len(m.host) for m in listed)]),
               max([15, *(len(m.client_id) for m in listed)]), 15]
    header = ["GROUP", "CONSUMER-ID", *(["GROUP-INSTANCE-ID"] if with_instance else []),
              "HOST", "CLIENT-ID", "#PARTITIONS"]
    # Kafka's format ends each padded row with a space; ASSIGNMENT follows unpadded
    text = "\n" + _padded(header, widths) + " " + ("ASSIGNMENT" if verbose else "") + "\n"
    for m in members:
        cells = [group, m.member_id, *([m.group_instance_id or ""] if with_instance else []),
                 m.host, m.client_id, str(len(m.assignment))]
        text += _padded(cells, widths) + " "
        text += (_assignment_text(m.assignment) if verbose else "") + "\n"
    output.out.append(text)


def state_text(output: Output, description: ConsumerGroupDescription) -> None:
    """``--describe --state`` of one group."""
    if not _should_print(output, description.group_id, description.state, 1):
        return
    c = description.coordinator
    coordinator = f"{c.host}:{c.port}  ({c.node_id})"
    widths = [max(25, len(coordinator)), 25, 20, 15]
    text = "\n" + _padded(["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE",
                           "#MEMBERS"], widths)
    text += "\n" + _padded([description.group_id, coordinator, description.assignor,
                            description.state, str(len(description.members))], widths)
    output.out.append(text + "\n")


def list_text(listings: Sequence[GroupListing], *, with_type: bool, with_state: bool) -> str:
    """``--list`` with ``--state`` and/or ``--type``: a table (Kafka pads every column)."""
    width = max([15, *(len(g.group_id) for g in listings)]) + 10
    widths = [width] + [20] * (int(with_type) + int(with_state))

    def line(cells: list[str]) -> str:
        return " ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + "\n"

    text = line(["GROUP", *(["TYPE"] if with_type else []), *(["STATE"] if with_state else [])])
    for g in listings:
        # Kafka's GroupType names ("Classic"); the broker answers "classic"
        text += line([g.group_id, *([(g.group_type or "unknown").capitalize()] if with_type
                                    else []),
                      *([g.state or "Unknown"] if with_state else [])])
    return text


def reset_plan_text(plan: Mapping[str, Mapping[TopicPartition, int]]) -> str:
    """``--reset-offsets``' table of new offsets (a header when any group was planned)."""
    widths = [30, 30, 10, 15]
    text = "\n" + _padded(["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], widths) if plan else ""
    for group in sorted(plan):
        for tp, offset in sorted(plan[group].items()):
            text += "\n" + _padded([group, tp.topic, str(tp.partition), str(offset)], widths)
    return text + "\n"


def delete_offsets_text(output: Output, group: str, topics: Sequence[str], top_error: str | None,
                        outcome: Mapping[TopicPartition, str | None]) -> None:
    """``--delete-offsets``: Kafka's line for the request's outcome, then a row per partition
    (``outcome``: an error text, or None for success; partition -1: a topic not found)."""
    messages = {
        "INVALID_GROUP_ID": f"'{group}' is not valid.",
        "GROUP_ID_NOT_FOUND": f"'{group}' does not exist.",
        "GROUP_AUTHORIZATION_FAILED": f"Access to '{group}' is not authorized.",
        "NON_EMPTY_GROUP": f"Deleting offsets of a consumer group '{group}' is forbidden if the "
                           "group is not empty.",
    }
    partition_level = ("GROUP_SUBSCRIBED_TO_TOPIC", "TOPIC_AUTHORIZATION_FAILED",
                       "UNKNOWN_TOPIC_OR_PARTITION")
    if top_error is None:
        output.out.append(f"Request succeed for deleting offsets with topic {', '.join(topics)} "
                          f"group {group}\n")
    elif top_error in messages:
        output.error(messages[top_error])
    elif top_error in partition_level:
        output.error("Encounter some partition level error, see the follow-up details:")
    else:
        output.error(f"Encounter some unknown error: {top_error}")
    widths = [30, 15]
    text = "\n" + _padded(["TOPIC", "PARTITION", "STATUS"], widths)
    for tp, error in sorted(outcome.items(), key=lambda item: f"{item[0].topic}{item[0].partition}"):
        text += "\n" + _padded([tp.topic, str(tp.partition) if tp.partition >= 0 else "Not Provided",
                                "Successful" if error is None else f"Error: :{error}"], widths)
    output.out.append(text + "\n")


def delete_groups_text(output: Output, deleted: Sequence[str],
                       failed: Mapping[str, str]) -> None:
    """``--delete``: Kafka's success line, or the failures one per line."""
    if not failed:
        output.out.append(f"Deletion of requested consumer groups ('{', '.join(deleted)}') was "
                          "successful.\n")
        return
    output.error("Deletion of some consumer groups failed:")
    output.out += [f"* Group '{g}' could not be deleted due to: {e}\n" for g, e in failed.items()]
    if deleted:
        output.out.append(f"\nThese consumer groups were deleted successfully: "
                          f"'{', '.join(deleted)}'\n")
