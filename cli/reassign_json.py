"""Text formats of ``kraft reassign-partitions``: Kafka's JSON documents in and out,
and the status lines, as pure functions (no cluster needed to test them).

Bad input raises ``ReassignmentError`` with a message for the operator. Partitions
are ``reassignment_plan.TopicPartition`` (ordered), printed as ``topic-partition``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs

from broker.client.admin_types import PartitionReassignment as Ongoing
from quorum.controller.reassignment_plan import ReassignmentPlan, TopicPartition

__all__ = [
    "Assignment",
    "Ongoing",
    "Proposal",
    "ReassignmentError",
    "generate_lines",
    "ids_text",
    "list_lines",
    "parse_broker_list",
    "parse_reassignment_json",
    "parse_topics_to_move",
    "partition_name",
    "reassignment_json",
    "verify_lines",
]

Assignment = dict[TopicPartition, tuple[int, ...]]


class ReassignmentError(Exception):
    """Bad input or a refused request; the message is for the operator."""


@attrs.frozen
class Proposal:
    """A plan and the assignment it starts from."""

    current: Assignment
    plan: ReassignmentPlan


def partition_name(tp: TopicPartition) -> str:
    return f"{tp.topic}-{tp.partition}"


def ids_text(values: Iterable[int]) -> str:
    return ",".join(str(v) for v in values)


# -- JSON in ------------------------------------------------------------------------------


def _json_object(text: str, what: str) -> dict[str, Any]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReassignmentError(f"The {what} is not valid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise ReassignmentError(f"The {what} must be a JSON object")
    version = doc.get("version", 1)
    if version != 1 or isinstance(version, bool):
        raise ReassignmentError(f"Not supported version field value {json.dumps(version)}")
    return doc


def _entries(doc: dict[str, Any], key: str, what: str) -> list[dict[str, Any]]:
    entries = doc.get(key)
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ReassignmentError(f'The {what} needs a "{key}" list of objects')
    if not entries:
        raise ReassignmentError(f'The {what} has an empty "{key}" list')
    return entries


def _typed(entry: dict[str, Any], key: str, where: str, check: Callable[[Any], bool],
           kind: str) -> Any:
    if key not in entry:
        raise ReassignmentError(f'{where} has no "{key}"')
    value = entry[key]
    if not check(value):
        raise ReassignmentError(f'{where}: "{key}" must be {kind}, not {json.dumps(value)}')
    return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def parse_topics_to_move(text: str) -> tuple[str, ...]:
    """The topics of a ``{"version":1,"topics":[{"topic":"foo"}]}`` document."""
    what = "topics-to-move JSON"
    topics = tuple(
        _typed(entry, "topic", f"topics entry {i}", lambda v: isinstance(v, str) and v != "",
               "a topic name")
        for i, entry in enumerate(_entries(_json_object(text, what), "topics", what))
    )
    twice = sorted({t for t in topics if topics.count(t) > 1})
    if twice:
        raise ReassignmentError(
            f"List of topics to reassign contains duplicate entries: {', '.join(twice)}"
        )
    return topics


def parse_broker_list(text: str) -> tuple[int, ...]:
    """``1,2,3`` -> (1, 2, 3); refuses anything but distinct non-negative ids."""
    try:
        brokers = tuple(int(part) for part in text.split(","))
    except ValueError:
        brokers = ()
    if not brokers or any(b < 0 for b in brokers):
        raise ReassignmentError(
            f'Invalid broker list "{text}": expected broker ids separated by commas, like 1,2,3'
        )
    twice = sorted({b for b in brokers if brokers.count(b) > 1})
    if twice:
        raise ReassignmentError(f"Broker list contains duplicate entries: {ids_text(twice)}")
    return brokers


def _partition_entry(i: int, entry: dict[str, Any]) -> tuple[TopicPartition, tuple[int, ...]]:
    where = f"partitions entry {i}"
    topic = _typed(entry, "topic", where, lambda v: isinstance(v, str) and v != "",
                   "a topic name")
    index = _typed(entry, "partition", where, lambda v: _is_int(v) and v >= 0,
                   "a partition number")
    tp = TopicPartition(topic, index)
    replicas = tuple(_typed(entry, "replicas", where,
                            lambda v: isinstance(v, list) and all(map(_is_int, v)),
                            "a list of broker ids"))
    if not replicas:
        raise ReassignmentError(
            f"Partition replica list cannot be empty ({partition_name(tp)})"
        )
    twice = sorted({r for r in replicas if replicas.count(r) > 1})
    if twice:
        raise ReassignmentError(
            "Partition replica lists may not contain duplicate entries: "
            f"{partition_name(tp)} contains multiple entries for {ids_text(twice)}"
        )
    log_dirs = entry.get("log_dirs", ["any"] * len(replicas))
    if not isinstance(log_dirs, list) or len(log_dirs) != len(replicas):
        raise ReassignmentError(
            f"Size of replicas list {list(replicas)} is different from size of log dirs "
            f"list {log_dirs} for partition {partition_name(tp)}"
        )
    if any(d != "any" for d in log_dirs):
        raise ReassignmentError(
            f'{partition_name(tp)}: log_dirs other than "any" ask to move replicas between log '
            "directories, which pykraft does not support"
        )
    return tp, replicas


def parse_reassignment_json(text: str) -> Assignment:
    """Targets of a ``{"version":1,"partitions":[{"topic","partition","replicas",
    "log_dirs"}]}`` document, in partition order."""
    what = "reassignment JSON"
    pairs = [
        _partition_entry(i, entry)
        for i, entry in enumerate(_entries(_json_object(text, what), "partitions", what))
    ]
    names = [tp for tp, _ in pairs]
    twice = sorted({tp for tp in names if names.count(tp) > 1})
    if twice:
        raise ReassignmentError(
            "Partition reassignment contains duplicate topic partitions: "
            + ",".join(map(partition_name, twice))
        )
    return dict(sorted(pairs))


# -- JSON out and text --------------------------------------------------------------------


def reassignment_json(assignment: Mapping[TopicPartition, Sequence[int]]) -> str:
    """Kafka's compact reassignment JSON, partitions by topic then number."""
    partitions = [
        {"topic": tp.topic, "partition": tp.partition, "replicas": list(replicas),
         "log_dirs": ["any"] * len(replicas)}
        for tp, replicas in sorted(assignment.items())
    ]
    return json.dumps({"version": 1, "partitions": partitions}, separators=(",", ":"))


def generate_lines(proposal: Proposal) -> list[str]:
    """Kafka's --generate output (the proposal only lists partitions whose replica
    list changes), then a line on what the plan costs."""
    plan, current = proposal.plan, proposal.current
    proposed = {tp: r for tp, r in plan.target.items() if r != current[tp]}
    summary = (
        f"Partitions changed: {len(proposed)} of {len(current)}; replicas moved: "
        f"{plan.replicas_moved} (the fewest a balanced plan moves: {plan.minimum_moves}); "
        f"preferred leader changes without a replica move: {len(plan.leader_changes)}."
    )
    return [
        "Current partition replica assignment", reassignment_json(current), "",
        "Proposed partition reassignment configuration", reassignment_json(proposed), "",
        summary,
    ]


def verify_lines(
    targets: Mapping[TopicPartition, Sequence[int]],
    ongoing: Mapping[TopicPartition, Ongoing],
    current: Mapping[TopicPartition, Sequence[int]],
) -> list[str]:
    """Kafka's --verify status lines: ``ongoing`` from ListPartitionReassignments, the
    other partitions' ``current`` replica lists (from the image) against the targets."""
    lines = ["Status of partition reassignment:"]
    for tp, target in sorted(targets.items()):
        name, replicas = partition_name(tp), tuple(current.get(tp, ()))
        if tp in ongoing:
            lines.append(f"Reassignment of partition {name} is still in progress.")
        elif replicas == tuple(target):
            lines.append(f"Reassignment of partition {name} is completed.")
        else:
            lines.append(
                f"There is no active reassignment of partition {name}, but replica set "
                f"is {ids_text(replicas)} rather than {ids_text(target)}."
            )
    return lines


def list_lines(ongoing: Mapping[TopicPartition, Ongoing]) -> list[str]:
    if not ongoing:
        return ["No partition reassignments found."]
    lines = ["Current partition reassignments:"]
    for tp, o in sorted(ongoing.items()):
        adding = f" adding: {ids_text(o.adding_replicas)}." if o.adding_replicas else ""
        removing = f" removing: {ids_text(o.removing_replicas)}." if o.removing_replicas else ""
        replicas = ids_text(o.replicas)
        lines.append(f"{partition_name(tp)}: replicas: {replicas}.{adding}{removing}")
    return lines
