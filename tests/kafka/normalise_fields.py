"""What may legitimately differ between a response field of Apache Kafka and of pykraft,
and nothing else: the rules of the differential protocol tests (``tests/kafka/differential``).

A sibling of ``normalise.py`` (the rules for the tools' text output): each rule names the
fields it rewrites and says why their difference is legitimate. ``normalise(value,
cluster)`` returns the value (a decoded response, attrs classes all the way down) with
every rule applied, for one cluster's facts (its broker and controller ids). A rule must
never hide what a client would act on: an error code, a count, an offset, a missing field
or element. ``differential/test_compare.py`` feeds such differences through and sees each
reported. Differences that are real but known are not rules: they are listed in
``differential/known.py`` with what pykraft lacks, and docs/compat.md is written from them.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import Any, Final

import attrs

__all__ = ["RULES", "Cluster", "FieldRule", "normalise"]

ZERO_UUID: Final = uuid.UUID(int=0)


@attrs.frozen
class Cluster:
    """The facts of one cluster that its answers name: which ids are brokers, controllers."""

    brokers: frozenset[int]
    controllers: frozenset[int]


@attrs.frozen
class FieldRule:
    """Rewrites ``fields`` of any message class, or only of the classes named in ``within``."""

    name: str
    reason: str
    fields: frozenset[str]
    rewrite: Callable[[Any, Cluster], Any]
    within: frozenset[str] = frozenset()


def _node(value: Any, cluster: Cluster) -> Any:
    """A node id as its role; -1 (none) and an id the cluster does not have stay."""
    if isinstance(value, tuple):
        return tuple(_node(v, cluster) for v in value)
    if isinstance(value, int) and not isinstance(value, bool):
        if value in cluster.brokers:
            return "<broker>"
        if value in cluster.controllers:
            return "<controller>"
    return value


def _topic_id(value: Any, _cluster: Cluster) -> Any:
    return "<topic-id>" if isinstance(value, uuid.UUID) and value != ZERO_UUID else value


def _present(placeholder: str) -> Callable[[Any, Cluster], Any]:
    """A placeholder where the field has a value; null and empty stay visible."""
    return lambda value, _cluster: placeholder if value not in (None, "") else value


def _member_id(value: Any, _cluster: Cluster) -> Any:
    # Kafka's and pykraft's member ids are "<client id>-<random UUID>": the prefix stays
    if isinstance(value, str):
        return re.sub(r"-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
                      "-<uuid>", value)
    return value


def _time(value: Any, _cluster: Cluster) -> Any:
    return "<time>" if isinstance(value, int) and value >= 0 else value


def _size(value: Any, _cluster: Cluster) -> Any:
    return "<size>" if isinstance(value, int) and value >= 0 else value


def _producer_id(value: Any, _cluster: Cluster) -> Any:
    return "<producer-id>" if isinstance(value, int) and value >= 0 else value


_DEFAULT_SOURCES: Final = frozenset({3, 4, 5})  # dynamic/static broker config, Kafka's default
_TOPIC_CONFIG: Final = 1


def _own_default_min_isr(value: Any, _cluster: Cluster) -> Any:
    """CreateTopics v5 topics with each side's own default ``min.insync.replicas`` entry
    (Kafka: 1 from the broker default; pykraft: a majority of the replication factor, set
    on the topic) made equal; any other value or source is left to be compared."""
    if not isinstance(value, tuple):
        return value
    topics = []
    for topic in value:
        configs = getattr(topic, "configs", None)
        if not configs:
            topics.append(topic)
            continue
        majority = str(topic.replication_factor // 2 + 1)
        fixed = tuple(
            attrs.evolve(c, value="<own default>", config_source=-1)
            if c.name == "min.insync.replicas"
            and ((c.value == "1" and c.config_source in _DEFAULT_SOURCES)
                 or (c.value == majority and c.config_source == _TOPIC_CONFIG))
            else c
            for c in configs)
        topics.append(attrs.evolve(topic, configs=fixed))
    return tuple(topics)


RULES: Final = (
    FieldRule(
        "each side's default min.insync.replicas",
        "pykraft gives a new topic min.insync.replicas = a majority of its replication factor "
        "as a topic config (docs/design.md: safer than Kafka's 1), where Kafka reports its "
        "broker default 1; an explicitly set value, or any other, is still compared",
        frozenset({"topics"}),
        _own_default_min_isr,
        within=frozenset({"CreateTopicsResponse"}),
    ),
    FieldRule(
        "throttle time",
        "quota throttling reflects each broker's own load and quotas at the moment",
        frozenset({"throttle_time_ms"}),
        lambda _value, _cluster: 0,
    ),
    FieldRule(
        "node ids",
        "which node leads, holds a replica or coordinates is each controller's choice "
        "(Kafka's placer starts at a random broker); the role (broker or controller), the "
        "count of replicas and -1 for none stay",
        frozenset({"leader_id", "node_id", "replica_nodes", "isr_nodes", "offline_replicas",
                   "controller_id", "replicas", "broker_id", "voter_id",
                   "eligible_leader_replicas", "last_known_elr", "preferred_leader"}),
        _node,
    ),
    FieldRule(
        "addresses",
        "each cluster listens on free loopback ports of its own",
        frozenset({"host", "port"}),
        _present("<address>"),
    ),
    FieldRule(
        "cluster id",
        "a random UUID each cluster draws when its storage is formatted",
        frozenset({"cluster_id"}),
        _present("<cluster-id>"),
    ),
    FieldRule(
        "topic ids",
        "a random UUID each controller draws when it creates the topic (zero stays zero)",
        frozenset({"topic_id"}),
        _topic_id,
    ),
    FieldRule(
        "error messages",
        "clients act on the error code; the message is free text each implementation "
        "words its own way (its presence is no contract either: Kafka often sends null)",
        frozenset({"error_message", "batch_index_error_message"}),
        lambda _value, _cluster: None,
    ),
    FieldRule(
        "member ids",
        "a member id is the client id and a random UUID the coordinator draws",
        frozenset({"member_id"}),
        _member_id,
    ),
    FieldRule(
        "group leader",
        "a JoinGroup answer names its leader by member id (client id and a random UUID)",
        frozenset({"leader"}),
        _member_id,
        within=frozenset({"JoinGroupResponse"}),
    ),
    FieldRule(
        "quorum state",
        "each KRaft quorum's metadata log (its offsets) and election history (its epochs) "
        "are its own: the two clusters wrote different records and held different votes",
        frozenset({"high_watermark", "log_end_offset", "leader_epoch"}),
        lambda value, _cluster: "<quorum-state>" if isinstance(value, int) and value >= 0
        else value,
        within=frozenset({"DescribeQuorumResponsePartition", "DescribeQuorumResponseReplicaState",
                          "VoteResponsePartition", "BeginQuorumEpochResponsePartition",
                          "EndQuorumEpochResponsePartition", "FetchSnapshotResponseLeaderIdAndEpoch"}),
    ),
    FieldRule(
        "wall-clock times",
        "the broker's clock at the moment of the request (an append time, a start time, "
        "a log's oldest timestamp); -1 (none) stays",
        frozenset({"log_append_time_ms", "last_caught_up_timestamp", "last_fetch_timestamp"}),
        _time,
    ),
    FieldRule(
        "sizes on disk",
        "a log's bytes on disk and the disk's free space depend on each implementation's "
        "segment and index files and on the machine",
        frozenset({"partition_size", "total_bytes", "usable_bytes"}),
        _size,
    ),
    FieldRule(
        "producer ids",
        "each controller allocates producer ids in blocks of its own; -1 (none) stays",
        frozenset({"producer_id"}),
        _producer_id,
    ),
    FieldRule(
        "log directories",
        "each cluster's log directory is a path under its own base directory",
        frozenset({"log_dir"}),
        _present("<log-dir>"),
    ),
)

# Arrays whose order means nothing (a set or a map on the wire): sorted by these fields
# (after the rules, so a rewritten id does not order them).
UNORDERED: Final[dict[str, tuple[str, ...]]] = {
    "brokers": ("node_id",),
    "topics": ("name", "topic", "partition_index"),
    "responses": ("name",),
    "partitions": ("partition_index", "index", "partition"),
    "partition_responses": ("index",),
    "api_keys": ("api_key",),
    "groups": ("group_id",),
    "results": ("resource_type", "resource_name", "name", "topic"),
    "responses_list": ("name",),
    "configs": ("name",),
    "resources": ("resource_type", "resource_name"),
    "replica_election_results": ("topic",),
    "partition_results": ("partition_id",),
    "supported_features": ("name",),
    "current_voters": ("replica_id",),
    "observers": ("replica_id",),
    "nodes": ("node_id",),
    "members": ("member_id",),
    "finalized_features": ("name",),
}


def _rule(cls: type, field_name: str) -> FieldRule | None:
    for rule in RULES:
        if field_name in rule.fields and (not rule.within or cls.__name__ in rule.within):
            return rule
    return None


def _sort_key(keys: tuple[str, ...]) -> Callable[[Any], tuple[str, ...]]:
    return lambda element: tuple(repr(getattr(element, k, None)) for k in keys)


def normalise(value: Any, cluster: Cluster) -> Any:
    """``value`` with every rule applied to its fields, at any depth."""
    if isinstance(value, tuple):
        return tuple(normalise(v, cluster) for v in value)
    if not attrs.has(type(value)):
        return value
    changes: dict[str, Any] = {}
    for f in attrs.fields(type(value)):
        child = getattr(value, f.name)
        new = normalise(child, cluster)
        rule = _rule(type(value), f.name)
        if rule is not None:
            new = rule.rewrite(new, cluster)
        keys = UNORDERED.get(f.name)
        if keys is not None and isinstance(new, tuple) and new and attrs.has(type(new[0])):
            new = tuple(sorted(new, key=_sort_key(keys)))
        if new is not child:
            changes[f.name] = new
    return attrs.evolve(value, **changes) if changes else value
