"""Generate ``quorum/wire/messages/*.py`` from Kafka's JSON message schemas.

Usage::

    .venv/bin/python scripts/gen_messages.py KAFKA_SCHEMA_DIR [--out quorum/wire/messages]
    .venv/bin/python scripts/gen_messages.py KAFKA_SCHEMA_DIR --check

``KAFKA_SCHEMA_DIR`` is a directory holding Kafka's message schema files
(``clients/src/main/resources/common/message/*.json`` and
``raft/src/main/resources/common/message/*.json`` in apache/kafka, with the
group coordinator's ``__consumer_offsets`` record schemas from
``group-coordinator/src/main/resources/common/message/*.json`` beside them).  The schemas
are never committed here; only the generated declaration modules are.
``--check`` regenerates in memory and exits 1 if a committed module differs.

What the generator keeps: field order, wire types, versions, nullable versions,
tags and tagged versions, ignorable flags and defaults.  What it drops: the
"about" prose, map keys and entity types (they do not change the bytes), and
fields that exist only outside the version range we declare for a message.

Facts the schema snapshot lacks are applied as patches in :data:`PATCHES`
(Vote v2 / KIP-996: ``PreVote`` and the Candidate* -> Replica* renames;
DescribeGroups v6 / KIP-1043: ``ErrorMessage``).
"""

from __future__ import annotations

import argparse
import ast
import json
import keyword
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs

from quorum.wire.api_keys import ApiKey

Schema = dict[str, Any]

# ---------------------------------------------------------------------------
# What to generate: module -> (schema name, lowest version, highest version).
# A message's range may be narrower than the schema's: fields outside it are
# dropped.  Request and response of an API always share one range.

MODULES: dict[str, list[tuple[str, int, int]]] = {
    "api_versions": [("ApiVersions", 0, 4)],
    "metadata": [("Metadata", 0, 12)],
    "produce": [("Produce", 0, 9)],
    "fetch": [("Fetch", 4, 17)],
    "list_offsets": [("ListOffsets", 1, 7)],
    "offset_for_leader_epoch": [("OffsetForLeaderEpoch", 0, 4)],
    "delete_records": [("DeleteRecords", 0, 2)],
    "describe_log_dirs": [("DescribeLogDirs", 0, 4)],
    "topics": [("CreateTopics", 0, 5), ("DeleteTopics", 0, 4)],
    "init_producer_id": [("InitProducerId", 0, 4)],
    "vote": [("Vote", 0, 2)],
    "quorum_epoch": [("BeginQuorumEpoch", 0, 1), ("EndQuorumEpoch", 0, 1)],
    "fetch_snapshot": [("FetchSnapshot", 0, 1)],
    "describe_quorum": [("DescribeQuorum", 0, 2)],
    "alter_partition": [("AlterPartition", 0, 3)],
    "broker_lifecycle": [("BrokerRegistration", 0, 4), ("BrokerHeartbeat", 0, 1)],
    "describe_cluster": [("DescribeCluster", 0, 1)],
    "control_records": [
        ("LeaderChangeMessage", 0, 1),
        ("VotersRecord", 0, 0),
        ("SnapshotHeaderRecord", 0, 0),
        ("SnapshotFooterRecord", 0, 0),
    ],
    "create_partitions": [("CreatePartitions", 0, 3)],
    "elect_leaders": [("ElectLeaders", 0, 2)],
    "partition_reassignments": [
        ("AlterPartitionReassignments", 0, 0),
        ("ListPartitionReassignments", 0, 0),
    ],
    "configs": [("IncrementalAlterConfigs", 0, 1), ("DescribeConfigs", 0, 4)],
    "allocate_producer_ids": [("AllocateProducerIds", 0, 0)],
    # The classic group APIs at Kafka 4.x's broker ranges (KIP-896 removed
    # OffsetCommit v0-1 and OffsetFetch v0; JoinGroup v0-1 and FindCoordinator
    # v0 stay for old librdkafka).  OffsetCommit/OffsetFetch v10 (topic ids,
    # KIP-848) are left out as every other topic-id version is.
    "find_coordinator": [("FindCoordinator", 0, 6)],
    "group_membership": [
        ("JoinGroup", 0, 9),
        ("SyncGroup", 0, 5),
        ("Heartbeat", 0, 4),
        ("LeaveGroup", 0, 5),
    ],
    "group_offsets": [("OffsetCommit", 2, 9), ("OffsetFetch", 1, 9), ("OffsetDelete", 0, 0)],
    "group_admin": [("ListGroups", 0, 5), ("DescribeGroups", 0, 6), ("DeleteGroups", 0, 2)],
    # __consumer_offsets records: key version 0/1 = offset commit, 2 = group metadata
    "group_records": [
        ("OffsetCommitKey", 0, 1),
        ("OffsetCommitValue", 0, 4),
        ("GroupMetadataKey", 2, 2),
        ("GroupMetadataValue", 0, 4),
    ],
    "unregister_broker": [("UnregisterBroker", 0, 0)],
    "metadata_records": [
        ("RegisterBrokerRecord", 0, 3),
        ("UnregisterBrokerRecord", 0, 0),
        ("TopicRecord", 0, 0),
        ("PartitionRecord", 0, 2),
        ("ConfigRecord", 0, 0),
        ("PartitionChangeRecord", 0, 2),
        ("FenceBrokerRecord", 0, 0),
        ("UnfenceBrokerRecord", 0, 0),
        ("RemoveTopicRecord", 0, 0),
        ("FeatureLevelRecord", 0, 0),
        ("ProducerIdsRecord", 0, 0),
        ("BrokerRegistrationChangeRecord", 0, 2),
        ("NoOpRecord", 0, 0),
        ("BeginTransactionRecord", 0, 0),
        ("EndTransactionRecord", 0, 0),
        ("AbortTransactionRecord", 0, 0),
    ],
}

# Modules written by hand that the package exports too (their own ``__all__``).
HAND_WRITTEN: tuple[str, ...] = ("pykraft_append", "pykraft_describe_image")

MODULE_DOCS: dict[str, str] = {
    "api_versions": "ApiVersions (18): the version handshake every connection starts with.",
    "metadata": "Metadata (3): brokers, topics and partition leaders.",
    "produce": "Produce (0): record batches from producers.",
    "fetch": "Fetch (1): client consumption, replica fetching and KRaft log replication.",
    "list_offsets": "ListOffsets (2): offsets by timestamp, earliest and latest.",
    "offset_for_leader_epoch": (
        "OffsetForLeaderEpoch (23): where a leader epoch ends, for follower truncation\n"
        "and consumer log divergence checks (KIP-101, KIP-320)."
    ),
    "delete_records": "DeleteRecords (21): advance partitions' log start offsets.",
    "describe_log_dirs": "DescribeLogDirs (35): log directories and partition sizes.",
    "topics": "CreateTopics (19) and DeleteTopics (20).",
    "init_producer_id": "InitProducerId (22): producer ids for idempotent producers.",
    "vote": "Vote (52): KRaft elections and pre-votes (KIP-595, KIP-853, KIP-996).",
    "quorum_epoch": "BeginQuorumEpoch (53) and EndQuorumEpoch (54): leader announce and resign.",
    "fetch_snapshot": "FetchSnapshot (59): KRaft snapshot download in byte chunks.",
    "describe_quorum": "DescribeQuorum (55): the leader's view of voters and observers.",
    "alter_partition": "AlterPartition (56): partition leaders ask the controller to change ISR.",
    "broker_lifecycle": "BrokerRegistration (62) and BrokerHeartbeat (63): broker liveness.",
    "describe_cluster": "DescribeCluster (60): cluster id, controller and brokers.",
    "control_records": (
        "KRaft control records: LeaderChangeMessage, VotersRecord and the snapshot\n"
        "header and footer records (data schemas)."
    ),
    "create_partitions": "CreatePartitions (37): add partitions to existing topics.",
    "elect_leaders": "ElectLeaders (43): preferred and unclean partition leader elections.",
    "partition_reassignments": (
        "AlterPartitionReassignments (45) and ListPartitionReassignments (46)."
    ),
    "configs": "IncrementalAlterConfigs (44) and DescribeConfigs (32): resource configs.",
    "allocate_producer_ids": "AllocateProducerIds (67): blocks of producer ids for brokers.",
    "unregister_broker": "UnregisterBroker (64): remove a broker's registration.",
    "find_coordinator": "FindCoordinator (10): which broker coordinates a group.",
    "group_membership": (
        "JoinGroup (11), SyncGroup (14), Heartbeat (12) and LeaveGroup (13): classic\n"
        "consumer group membership."
    ),
    "group_offsets": "OffsetCommit (8), OffsetFetch (9) and OffsetDelete (47): committed offsets.",
    "group_admin": "ListGroups (16), DescribeGroups (15) and DeleteGroups (42): group admin.",
    "group_records": (
        "The group coordinator's __consumer_offsets records: offset commits and group\n"
        "metadata (key and value data schemas)."
    ),
    "metadata_records": (
        "KRaft metadata records (the __cluster_metadata log's state-machine records)."
    ),
}

# Hand-written code appended to a module: (names for __all__, source text).
MODULE_EXTRAS: dict[str, tuple[list[str], str]] = {
    "produce": (
        ["OLD_MESSAGE_FORMAT_VERSIONS", "is_old_message_format"],
        '''# Produce v0-2 carry message formats v0/v1 (magic 0 and 1), which Kafka 4.x
# refuses.  We decode these versions (their layout is the schema's) so that the
# broker can answer every partition with UNSUPPORTED_FOR_MESSAGE_FORMAT (43)
# instead of closing the connection; record batch v2 needs Produce v3+.
OLD_MESSAGE_FORMAT_VERSIONS: Final = range(0, 3)


def is_old_message_format(version: int) -> bool:
    """Whether a Produce request of ``version`` must be answered with error 43."""
    return version in OLD_MESSAGE_FORMAT_VERSIONS''',
    ),
}

# Nested struct class names where the default rule reads badly.
STRUCT_NAMES: dict[tuple[str, str], str] = {
    ("FetchResponse", "FetchableTopicResponse"): "FetchResponseTopic",
    ("CreateTopicsRequest", "CreatableTopic"): "CreateTopicsRequestTopic",
    ("CreateTopicsRequest", "CreatableReplicaAssignment"): "CreateTopicsRequestAssignment",
    ("CreateTopicsRequest", "CreatableTopicConfig"): "CreateTopicsRequestConfig",
    ("CreateTopicsResponse", "CreatableTopicResult"): "CreateTopicsResponseTopic",
    ("CreateTopicsResponse", "CreatableTopicConfigs"): "CreateTopicsResponseConfig",
    ("DeleteTopicsRequest", "DeleteTopicState"): "DeleteTopicsRequestTopic",
    ("DeleteTopicsResponse", "DeletableTopicResult"): "DeleteTopicsResponseTopic",
    ("FetchSnapshotRequest", "TopicSnapshot"): "FetchSnapshotRequestTopic",
    ("FetchSnapshotRequest", "PartitionSnapshot"): "FetchSnapshotRequestPartition",
    ("FetchSnapshotResponse", "TopicSnapshot"): "FetchSnapshotResponseTopic",
    ("FetchSnapshotResponse", "PartitionSnapshot"): "FetchSnapshotResponsePartition",
    ("ProduceResponse", "BatchIndexAndErrorMessage"): "ProduceResponseRecordError",
    ("LeaderChangeMessage", "Voter"): "LeaderChangeVoter",
    ("OffsetForLeaderEpochRequest", "OffsetForLeaderTopic"): "OffsetForLeaderEpochRequestTopic",
    ("OffsetForLeaderEpochRequest", "OffsetForLeaderPartition"): (
        "OffsetForLeaderEpochRequestPartition"
    ),
    ("OffsetForLeaderEpochResponse", "OffsetForLeaderTopicResult"): (
        "OffsetForLeaderEpochResponseTopic"
    ),
    ("OffsetForLeaderEpochResponse", "EpochEndOffset"): "OffsetForLeaderEpochResponsePartition",
    ("DeleteRecordsResponse", "DeleteRecordsTopicResult"): "DeleteRecordsResponseTopic",
    ("DeleteRecordsResponse", "DeleteRecordsPartitionResult"): "DeleteRecordsResponsePartition",
    ("DescribeLogDirsRequest", "DescribableLogDirTopic"): "DescribeLogDirsRequestTopic",
}

# Python field names where snake_case of Kafka's name reads badly.
FIELD_NAMES: dict[str, str] = {"KRaftVersionFeature": "kraft_version_feature"}

PRIMITIVES: dict[str, tuple[str, str]] = {
    # schema type -> (wire constant, python annotation)
    "bool": ("BOOL", "bool"),
    "int8": ("INT8", "int"),
    "int16": ("INT16", "int"),
    "uint16": ("UINT16", "int"),
    "int32": ("INT32", "int"),
    "uint32": ("UINT32", "int"),
    "int64": ("INT64", "int"),
    "float64": ("FLOAT64", "float"),
    "string": ("STRING", "str"),
    "uuid": ("UUID", "uuid.UUID"),
    "bytes": ("BYTES", "bytes"),
    "records": ("RECORDS", "bytes"),
}


# ---------------------------------------------------------------------------
# Patches for facts newer than the schema snapshot.


def _walk_fields(fields: list[Schema]) -> Iterator[Schema]:
    for f in fields:
        yield f
        yield from _walk_fields(f.get("fields", []))


def patch_vote_v2(schema: Schema) -> None:
    """KIP-996 (Kafka 4.0): Vote v2 adds ``PreVote`` to each request partition and
    renames CandidateEpoch/CandidateId/CandidateDirectoryId to Replica*.  Both
    request and response go to v2; the response layout is unchanged."""
    if schema["validVersions"] != "0-1":
        return  # the schema already knows v2: trust it
    schema["validVersions"] = "0-2"
    if schema["type"] != "request":
        return
    renames = {
        "CandidateEpoch": "ReplicaEpoch",
        "CandidateId": "ReplicaId",
        "CandidateDirectoryId": "ReplicaDirectoryId",
    }
    for f in _walk_fields(schema["fields"]):
        f["name"] = renames.get(f["name"], f["name"])
        if f["name"] == "Partitions":
            f["fields"].append({"name": "PreVote", "type": "bool", "versions": "2+"})


def patch_describe_groups_v6(schema: Schema) -> None:
    """KIP-1043 (Kafka 4.0): DescribeGroups v6 answers an unknown group with
    GROUP_ID_NOT_FOUND and adds a nullable ``ErrorMessage`` to each group."""
    if schema["validVersions"] != "0-5":
        return  # the schema already knows v6: trust it
    schema["validVersions"] = "0-6"
    if schema["type"] != "response":
        return
    groups = next(f for f in schema["fields"] if f["name"] == "Groups")
    at = next(i for i, f in enumerate(groups["fields"]) if f["name"] == "ErrorCode") + 1
    groups["fields"].insert(
        at,
        {
            "name": "ErrorMessage",
            "type": "string",
            "versions": "6+",
            "nullableVersions": "6+",
            "default": "null",
        },
    )


PATCHES: dict[str, Callable[[Schema], None]] = {
    "VoteRequest": patch_vote_v2,
    "VoteResponse": patch_vote_v2,
    "DescribeGroupsRequest": patch_describe_groups_v6,
    "DescribeGroupsResponse": patch_describe_groups_v6,
}


# ---------------------------------------------------------------------------
# Reading schemas.


def schema_path(schema_dir: Path, name: str) -> Path:
    """Client/KRaft schemas sit in the directory, metadata records in ``metadata/``."""
    path = schema_dir / f"{name}.json"
    return path if path.exists() else schema_dir / "metadata" / f"{name}.json"


def load_schema(path: Path) -> Schema:
    text = re.sub(r"^\s*//.*$", "", path.read_text(), flags=re.M)
    schema: Schema = json.loads(text)
    patch = PATCHES.get(schema["name"])
    if patch is not None:
        patch(schema)
    common = {s["name"]: s["fields"] for s in schema.get("commonStructs", [])}
    for f in _walk_fields(schema["fields"]):
        name = f["type"].removeprefix("[]")
        if "fields" not in f and name in common:
            f["fields"] = json.loads(json.dumps(common[name]))
    return schema


@attrs.frozen
class Versions:
    low: int
    high: int  # 32767 stands for "and later"

    @classmethod
    def parse(cls, text: str | None) -> Versions | None:
        if text is None or text in ("", "none"):
            return None
        if text.endswith("+"):
            return cls(int(text[:-1]), 32767)
        low, _, high = text.partition("-")
        return cls(int(low), int(high or low))

    def overlaps(self, low: int, high: int) -> bool:
        return self.low <= high and low <= self.high


def snake(name: str) -> str:
    if name in FIELD_NAMES:
        return FIELD_NAMES[name]
    out = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()
    return out + "_" if keyword.iskeyword(out) else out


def struct_class_name(message: str, struct: str, api: str) -> str:
    """``VoteRequest`` + ``PartitionData`` -> ``VoteRequestPartition``."""
    if (message, struct) in STRUCT_NAMES:
        return STRUCT_NAMES[(message, struct)]
    kind = message.removeprefix(api)
    short = struct.removesuffix("Data")
    if kind == "Response":
        short = short.removesuffix("Response")
    short = short.replace(api, "", 1) if short != api else short
    short = short.removeprefix(kind) or struct
    return f"{message}{short}"


# ---------------------------------------------------------------------------
# Emitting code.


@attrs.define
class Emitter:
    """Collects struct and message classes for one module, children first."""

    low: int
    high: int
    classes: list[str] = attrs.field(factory=list)
    names: list[str] = attrs.field(factory=list)
    constants: set[str] = attrs.field(factory=set)
    uses_uuid: bool = False
    typing: set[str] = attrs.field(factory=set)
    # (message class name, api name) of the message being emitted
    context: tuple[str, str] = ("", "")

    def emit_struct(self, cls_name: str, fields: list[Schema], decorator: str | None) -> None:
        lines = []
        for f in fields:
            v = Versions.parse(f["versions"])
            if v is None or not v.overlaps(self.low, self.high):
                continue
            lines.extend(self.field_lines(f))
        head = [decorator] if decorator else []
        head += ["@attrs.frozen(kw_only=True)", f"class {cls_name}:"]
        self.classes.append("\n".join(head + (lines or ["    pass"])))
        self.names.append(cls_name)

    def field_lines(self, f: Schema) -> list[str]:
        name = snake(f["name"])
        nullable = self.in_range(f.get("nullableVersions"))
        type_text = f["type"]
        is_array = type_text.startswith("[]")
        elem = type_text.removeprefix("[]")
        if elem in PRIMITIVES:
            const, py = PRIMITIVES[elem]
            self.constants.add(const)
            self.uses_uuid |= elem == "uuid"
            wire = f"array({const})" if is_array else const
        else:
            py = self.nested_class(f, elem)
            wire = f"array({py})" if is_array else f"struct({py})"
            self.constants.add("array" if is_array else "struct")
        ann = f"tuple[{py}, ...]" if is_array else py
        if nullable:
            ann += " | None"
        args = [wire, *self.spec_args(f), self.default_arg(f, elem, is_array, py)]
        call = f"field({', '.join(args)})"
        line = f"    {name}: {ann} = {call}"
        if len(line) <= 100:
            return [line]
        joined = f"        {', '.join(args)}"
        if len(joined) <= 100:
            return [f"    {name}: {ann} = field(", joined, "    )"]
        return [f"    {name}: {ann} = field(", *(f"        {a}," for a in args), "    )"]

    def nested_class(self, f: Schema, elem: str) -> str:
        message, api = self.context
        cls_name = struct_class_name(message, elem, api)
        if cls_name not in self.names:
            self.emit_struct(cls_name, f["fields"], None)
        return cls_name

    def in_range(self, versions: str | None) -> bool:
        """Whether ``versions`` meets the declared range (nullable-only-later is not nullable)."""
        parsed = Versions.parse(versions)
        return parsed is not None and parsed.overlaps(self.low, self.high)

    def spec_args(self, f: Schema) -> list[str]:
        args = []
        if f["versions"] != "0+":
            args.append(f'versions="{f["versions"]}"')
        if self.in_range(f.get("nullableVersions")):
            args.append(f'nullable="{f["nullableVersions"]}"')
        if "tag" in f:
            args.append(f"tag={f['tag']}")
            args.append(f'tagged="{f["taggedVersions"]}"')
        if f.get("ignorable"):
            args.append("ignorable=True")
        return args

    def default_arg(self, f: Schema, elem: str, is_array: bool, py: str) -> str:
        given = f.get("default")
        # schemas write defaults as strings, a few as JSON numbers or booleans
        raw = (
            None if given is None else str(given).lower() if isinstance(given, bool) else str(given)
        )
        nullable = self.in_range(f.get("nullableVersions"))
        if is_array:
            # a nullable array whose default is null (PartitionChangeRecord's "no change")
            return "default=None" if raw == "null" and nullable else "default=()"
        if elem not in PRIMITIVES:
            return f"factory={py}"
        if raw == "null" or (elem == "records" and nullable):
            return "default=None"
        if elem == "bool":
            return f"default={raw == 'true'}" if raw else "default=False"
        if elem == "string":
            return f"default={json.dumps(raw or '')}"
        if elem in ("bytes", "records"):
            return 'default=b""'
        if elem == "uuid":
            self.constants.add("ZERO_UUID")
            return "default=ZERO_UUID"
        if elem == "float64":
            return f"default={float(raw or 0)!r}"
        if raw and raw.lower().startswith("0x"):
            return f"default=0x{raw[2:].upper()}"
        return f"default={int(raw or '0', 0)}"


def emit_message(em: Emitter, schema: Schema, low: int, high: int) -> None:
    name = schema["name"]
    api = re.sub(r"(Request|Response)$", "", name)
    em.context = (name, api)
    flexible = schema["flexibleVersions"]
    api_key = schema.get("apiKey")
    deco = f'@message(api_key={api_key}, versions=({low}, {high}), flexible="{flexible}")'
    schema_range = Versions.parse(schema["validVersions"])
    assert schema_range is not None and schema_range.low <= low and high <= schema_range.high, (
        f"{name}: {low}-{high} is outside the schema's {schema['validVersions']}"
    )
    em.emit_struct(name, schema["fields"], deco)


def render_module(module: str, schema_dir: Path) -> tuple[str, list[str]]:
    entries = MODULES[module]
    low = min(lo for _, lo, _ in entries)
    high = max(hi for _, _, hi in entries)
    em = Emitter(low=low, high=high)
    registrations = []
    for api, lo, hi in entries:
        em.low, em.high = lo, hi
        is_data = api.endswith(("Message", "Record", "Key", "Value"))
        kinds = ("Request", "Response") if not is_data else ("",)
        for kind in kinds:
            emit_message(em, load_schema(schema_path(schema_dir, f"{api}{kind}")), lo, hi)
        if kinds != ("",):
            registrations.append(
                f"register_api(\n    ApiSpec(\n        key=ApiKey.{em_key(schema_dir, api).name},\n"
                f'        name="{api}",\n        request={api}Request,\n'
                f"        response={api}Response,\n        low={lo},\n        high={hi},\n"
                "    )\n)"
            )
    extra_names, extra_text = MODULE_EXTRAS.get(module, ([], ""))
    em.names += extra_names
    if extra_text:
        em.classes.append(extra_text)
        em.typing.add("Final")
    return assemble(module, em, registrations), em.names


def em_key(schema_dir: Path, api: str) -> ApiKey:
    key = ApiKey(load_schema(schema_path(schema_dir, f"{api}Request"))["apiKey"])
    assert key.name == snake(api).upper(), f"{api} is api key {key.value}, {key.name} in ApiKey"
    return key


def assemble(module: str, em: Emitter, registrations: list[str]) -> str:
    imports = ["from __future__ import annotations", ""]
    if em.uses_uuid:
        imports.append("import uuid")
    if em.typing:
        imports.append(f"from typing import {', '.join(sorted(em.typing))}")
    if em.uses_uuid or em.typing:
        imports.append("")
    imports += ["import attrs", ""]
    if registrations:
        imports.append("from quorum.wire.api_keys import ApiKey")
        imports.append("from quorum.wire.apis import ApiSpec, register_api")
    # isort order as ruff applies it: constants, then functions, numbers naturally
    schema_names = sorted(
        [*(c for c in em.constants if c != "ZERO_UUID"), "field", "message"],
        key=lambda n: (n.islower(), re.sub(r"\d+", lambda m: m[0].zfill(3), n)),
    )
    line = f"from quorum.wire.schema import {', '.join(schema_names)}"
    if len(line) > 100:
        line = (
            "from quorum.wire.schema import (\n"
            + "".join(f"    {n},\n" for n in schema_names)
            + ")"
        )
    imports.append(line)
    if "ZERO_UUID" in em.constants:
        imports.append("from quorum.wire.uuids import ZERO_UUID")
    all_names = "\n".join(f'    "{n}",' for n in sorted(em.names, key=isort_key))
    doc = (
        f'"""{MODULE_DOCS[module]}\n\n'
        "Generated by scripts/gen_messages.py from Kafka's JSON message schemas:\n"
        'change the generator (or its PATCHES), not this file.\n"""'
    )
    head = f"{doc}\n\n{chr(10).join(imports).strip()}\n\n__all__ = [\n{all_names}\n]"
    return "\n\n\n".join([head, *em.classes, *registrations]) + "\n"


def isort_key(name: str) -> tuple[int, str]:
    """RUF022's order: CONSTANTS, then Classes, then functions."""
    return (0 if name.isupper() else 1 if name[:1].isupper() else 2, name)


def render_init(exports: dict[str, list[str]]) -> str:
    lines = [
        '"""Kafka message declarations; importing the package registers every API.\n\n'
        'Generated by scripts/gen_messages.py.\n"""',
        "",
        "from __future__ import annotations",
        "",
    ]
    for module in sorted(exports):
        # ruff's isort compares imported names without case; RUF022 (__all__) with it
        names = sorted(exports[module], key=lambda n: (isort_key(n)[0], n.lower()))
        lines.append(f"from quorum.wire.messages.{module} import (")
        lines += [f"    {n}," for n in names]
        lines.append(")")
    lines += ["", "__all__ = ["]
    lines += [
        f'    "{n}",' for n in sorted((n for ns in exports.values() for n in ns), key=isort_key)
    ]
    lines += ["]", ""]
    return "\n".join(lines)


def hand_written_names(path: Path) -> list[str]:
    """The ``__all__`` of a hand-written module, read without importing it."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return [str(name) for name in ast.literal_eval(node.value)]
    raise SystemExit(f"{path} has no __all__")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("schema_dir", type=Path)
    parser.add_argument("--out", type=Path, default=Path("quorum/wire/messages"))
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    outputs: dict[str, str] = {}
    exports: dict[str, list[str]] = {}
    for module in MODULES:
        outputs[f"{module}.py"], exports[module] = render_module(module, args.schema_dir)
    for module in HAND_WRITTEN:
        exports[module] = hand_written_names(args.out / f"{module}.py")
    outputs["__init__.py"] = render_init(exports)
    stale = []
    for name, text in outputs.items():
        path = args.out / name
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(str(path))
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for path in stale:
        print(f"out of date: {path}", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
