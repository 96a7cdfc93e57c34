"""What may legitimately differ between a Kafka tool's output against Apache Kafka and against
pykraft, and nothing else.

Each rule rewrites one kind of token and says why the difference is legitimate;
``differences(kafka, pykraft)`` applies every rule to both outputs and returns what still
differs, as unified-diff lines (empty when the outputs agree). A rule must never hide a
difference a user would care about: a wrong count, a wrong error, a missing field or line,
a leader that is not among the replicas. ``test_normalise.py`` feeds such differences
through and checks that they are reported.

``KNOWN`` is another list: differences that are *not* legitimate but known, each with what
pykraft lacks. They are never applied by ``differences``; a test that meets only known
differences reports them as an expected failure naming them (``pending``), and a known
difference that no longer occurs is caught by ``test_topics_tool.py`` so it is removed.
"""

from __future__ import annotations

import difflib
import enum
import itertools
import json
import re
from collections.abc import Callable, Sequence
from typing import Final

import attrs

__all__ = ["KNOWN", "RULES", "UNORDERED_LINES", "Known", "Rule", "Side", "differences",
           "normalise", "pending"]


class Side(enum.Enum):
    KAFKA = "kafka"
    PYKRAFT = "pykraft"


@attrs.frozen
class Rule:
    name: str
    reason: str
    rewrite: Callable[[str, Side], str]


def _sub(pattern: str, replacement: str | Callable[[re.Match[str]], str]
         ) -> Callable[[str, Side], str]:
    compiled = re.compile(pattern, re.MULTILINE)
    return lambda text, _side: compiled.sub(replacement, text)


def _ids(value: str) -> str:
    """A comma-separated id list as one placeholder per id: the count stays visible."""
    return ",".join("B" for part in value.split(",") if part.strip())


def _fields(line: str) -> list[tuple[str, str]]:
    return re.findall(r"(\w+): ([^\t]*)", line)


def _placement(line: re.Match[str]) -> str:
    """A partition line of ``kafka-topics --describe`` with its broker ids as placeholders;
    a leader that is not among the replicas stays visible."""
    fields = _fields(line.group(2))
    replicas = {r.strip() for name, value in fields if name == "Replicas"
                for r in value.split(",") if r.strip()}
    out = []
    for name, value in fields:
        if name == "Leader" and value != "none":
            value = "B" if value in replicas else f"NOT-A-REPLICA({value})"
        elif name in ("Replicas", "Isr", "Elr", "LastKnownElr"):
            value = _ids(value)
        out.append(f"{name}: {value}")
    return line.group(1) + "\t".join(out)


def _without_default_min_isr(text: str, side: Side) -> str:
    """Drop ``min.insync.replicas=N`` from a topic line's Configs when N is the side's own
    default for that topic: 1 for Kafka, a majority of the replication factor for pykraft."""
    def one(line: re.Match[str]) -> str:
        factor = re.search(r"ReplicationFactor: (\d+)", line.group(0))
        if factor is None:
            return line.group(0)
        default = 1 if side is Side.KAFKA else int(factor.group(1)) // 2 + 1
        configs = [c for c in line.group(2).split(",")
                   if c and c != f"min.insync.replicas={default}"]
        return line.group(1) + ",".join(configs)

    return re.sub(r"^(Topic: .*\tConfigs: )(.*)$", one, text, flags=re.MULTILINE)


def _quorum_status(text: str, _side: Side) -> str:
    """``kafka-metadata-quorum describe --status``: the leader as one of the voters, the
    epoch, high watermark and lags as placeholders, voters and observers sorted by id."""
    voters = re.search(r"^CurrentVoters:\s+(\[.*\])$", text, re.MULTILINE)
    ids = set() if voters is None else {str(v.get("id")) for v in _json_list(voters.group(1))}

    def leader(match: re.Match[str]) -> str:
        value = match.group(2)
        return match.group(1) + ("<voter>" if value in ids else f"NOT-A-VOTER({value})")

    text = re.sub(r"^(LeaderId:\s+)(-?\d+)$", leader, text, flags=re.MULTILINE)
    text = re.sub(r"^((?:LeaderEpoch|HighWatermark|MaxFollowerLag|MaxFollowerLagTimeMs):\s+)"
                  r"-?\d+$", r"\1<n>", text, flags=re.MULTILINE)

    def by_id(match: re.Match[str]) -> str:
        nodes = sorted(_json_list(match.group(2)), key=lambda node: int(str(node.get("id", 0))))
        return match.group(1) + json.dumps(nodes)

    return re.sub(r"^((?:CurrentVoters|CurrentObservers):\s+)(\[.*\])$", by_id, text,
                  flags=re.MULTILINE)


def _json_list(text: str) -> list[dict[str, object]]:
    try:
        found = json.loads(text)
    except ValueError:
        return []
    return [n for n in found if isinstance(n, dict)] if isinstance(found, list) else []


def _quorum_replication(text: str, _side: Side) -> str:
    """``kafka-metadata-quorum describe --replication``: the voters' ids (which one leads is
    the election's) and every offset, lag and time as placeholders; rows in status order,
    observers by id. Directory ids and statuses stay."""
    lines = text.splitlines()
    header = next((i for i, line in enumerate(lines) if line.startswith("NodeId\tDirectoryId")),
                  None)
    if header is None:
        return text
    order = {"Leader": 0, "Follower": 1, "Observer": 2}
    rows: list[tuple[int, int, str]] = []
    for line in lines[header + 1:]:
        cells = [c.strip() for c in line.split("\t") if c.strip()]
        if len(cells) != 7:
            rows.append((9, 0, line))
            continue
        node, directory, _end, _lag, _fetch, _caught, status = cells
        voter = status in ("Leader", "Follower")
        shown = "<voter>" if voter else node
        rows.append((order.get(status, 9), 0 if voter else int(node),
                     "\t".join([shown, directory, "<offset>", "<lag>", "<time>", "<time>",
                                status])))
    return "\n".join([*lines[:header + 1], *(row for *_key, row in sorted(rows))]) + "\n"


def _log_dirs_json(text: str, _side: Side) -> str:
    """``kafka-log-dirs --describe``'s JSON line: brokers and partitions in id order (the
    tool prints maps in their hash order), each partition's size as 0 or >0."""
    def one(match: re.Match[str]) -> str:
        try:
            found = json.loads(match.group(0))
        except ValueError:
            return match.group(0)
        if not isinstance(found, dict) or "brokers" not in found:
            return match.group(0)
        for broker in found["brokers"]:
            for log_dir in broker.get("logDirs", []):
                log_dir["partitions"] = sorted(log_dir.get("partitions", []),
                                               key=lambda p: str(p.get("partition")))
                for partition in log_dir["partitions"]:
                    partition["size"] = ">0" if partition.get("size") else 0
        found["brokers"] = sorted(found["brokers"], key=lambda b: int(b.get("broker", 0)))
        return json.dumps(found, sort_keys=True)

    return re.sub(r"^\{.*\}$", one, text, flags=re.MULTILINE)


def _broker_blocks(text: str, _side: Side) -> str:
    """``kafka-broker-api-versions``: one block per broker, printed in a map's order."""
    blocks = re.findall(r"^\S+ \(id: \d+ .*?^\)$", text, flags=re.MULTILINE | re.DOTALL)
    if not blocks:
        return text
    return "\n".join(sorted(blocks, key=_block_id)) + "\n"


def _block_id(block: str) -> int:
    found = re.search(r"\(id: (\d+)", block)
    return int(found.group(1)) if found else -1


def _without_default_min_isr_entries(text: str, side: Side) -> str:
    """``kafka-configs --describe`` entries of each side's own default
    ``min.insync.replicas``: Kafka's cluster-wide 1 (DYNAMIC_DEFAULT_BROKER_CONFIG, written
    at format for ELR), pykraft's majority written as a topic config (2 for the replication
    factor 3 these tools' topics use)."""
    if side is Side.KAFKA:
        pattern = r"^  min\.insync\.replicas=1 sensitive=false synonyms=" \
                  r"\{DYNAMIC_DEFAULT_BROKER_CONFIG:min\.insync\.replicas=1\}\n"
    else:
        pattern = r"^  min\.insync\.replicas=2 sensitive=false synonyms=" \
                  r"\{DYNAMIC_TOPIC_CONFIG:min\.insync\.replicas=2[^}\n]*\}\n"
    return re.sub(pattern, "", text, flags=re.MULTILINE)


RULES: Final = (
    Rule(
        "topic ids",
        "a topic id is a random UUID that each cluster's controller draws at creation",
        _sub(r"(TopicId: )[A-Za-z0-9_-]{22}", r"\1<topic-id>"),
    ),
    Rule(
        "replica placement",
        "which brokers hold a partition and which leads it is the controller's choice "
        "(Kafka's StripedReplicaPlacer starts at a random broker); the counts and the "
        "leader being one of the replicas are kept",
        _sub(r"^(\s+)(Topic: .*\tPartition: .*)$", _placement),
    ),
    Rule(
        "default min.insync.replicas",
        "pykraft's default min.insync.replicas is a majority of the topic's replication "
        "factor, written as a topic config at creation (ARCHITECTURE.md on acks=all, "
        "quorum/controller/topic_configs.py), Kafka's is 1 (shown by 4.1+, which writes it "
        "as a cluster config for ELR); each side's own default is dropped, any other "
        "value stays",
        _without_default_min_isr,
    ),
    Rule(
        "default min.insync.replicas entries",
        "the same defaults as above in kafka-configs' output: Kafka 4.1+ writes "
        "min.insync.replicas=1 as a cluster-wide dynamic default, pykraft a majority as each "
        "topic's config; only those exact entries are dropped",
        _without_default_min_isr_entries,
    ),
    Rule(
        "cluster ids",
        "a cluster id is a random UUID drawn when the cluster's storage is formatted",
        _sub(r"^(ClusterId:\s+|Cluster ID: )[A-Za-z0-9_-]{22}$", r"\1<cluster-id>"),
    ),
    Rule(
        "ports",
        "every listener is on a free port the kernel picked when the cluster was laid out",
        _sub(r"\b127\.0\.0\.1:\d+\b", "127.0.0.1:<port>"),
    ),
    Rule(
        "log directories",
        "each launcher lays out its nodes' directories its own way under its own temporary "
        "base (Kafka: NODE/data, pykraft: NODE/logs)",
        _sub(r'"(/[^"]*)"(?=[,\]}])', '"<dir>"'),
    ),
    Rule(
        "quorum status",
        "which voter leads, how many elections it took and how many metadata records each "
        "side's controllers wrote (they write different records) are no contract; the "
        "leader must still be one of the voters. DescribeQuorum returns voters and "
        "observers in no defined order (Kafka: a hash map's)",
        _quorum_status,
    ),
    Rule(
        "quorum replication",
        "the same for the replication table: which voter leads, log end offsets, lags and "
        "fetch times are each quorum's own; rows are compared by status, observers by id",
        _quorum_replication,
    ),
    Rule(
        "log-dirs order and sizes",
        "kafka-log-dirs prints brokers and partitions in a hash map's order; a partition's "
        "bytes depend on how the producer happened to batch its records, so only empty or "
        "not is compared",
        _log_dirs_json,
    ),
    Rule(
        "broker order",
        "kafka-broker-api-versions prints one block per broker in a hash map's order",
        _broker_blocks,
    ),
    Rule(
        "reassignment placement",
        "the replicas of a current or proposed assignment are the controller's (random "
        "start) or the tool's (random start) placement; the count of replicas stays",
        _sub(r'"replicas":\[([\d,]*)\]', lambda m: '"replicas":[' + _ids(m.group(1)) + "]"),
    ),
)

UNORDERED_LINES: Final = Rule(
    "lines in any order",
    "for a consumer reading several partitions: Kafka orders records within a partition "
    "only, and which partition's fetch answers first is timing (each line carries its "
    "partition and offset, so nothing is lost by sorting)",
    lambda text, _side: "".join(sorted(text.splitlines(keepends=True))),
)


@attrs.frozen
class Known:
    name: str
    lacking: str
    rewrite: Callable[[str, Side], str]


KNOWN: Final = (
    Known(
        "ELR fields",
        "pykraft has no eligible leader replicas (KIP-966) and does not advertise "
        "DescribeTopicPartitions (API 75), so Admin.describeTopics falls back to Metadata "
        "and kafka-topics prints 'Elr: N/A' where Kafka prints the (empty) lists",
        _sub(r"\t(Elr|LastKnownElr): [^\t\n]*", r"\t\1: <elr>"),
    ),
    Known(
        "API versions",
        "pykraft serves fewer APIs and versions than Kafka 4.4 (no transactions, ACLs, SASL, "
        "quotas, KIP-848 consumer groups, share groups, telemetry; older top versions), and "
        "advertises its own PYKRAFT_DESCRIBE_IMAGE (10001); docs/compat.md lists them",
        lambda text, _side: re.sub(r"^\tUNKNOWN\(\d+\): .*\n", "", re.sub(
            r"^\t(\w+)\((\d+)\): .*$", r"\t\1(\2): <versions>", text,
            flags=re.MULTILINE), flags=re.MULTILINE),
    ),
    Known(
        "finalized features",
        "pykraft's ApiVersions response carries no SupportedFeatures / FinalizedFeatures "
        "(KIP-584), so kafka-features describe prints nothing",
        _sub(r"^Feature: .*\n", ""),
    ),
    Known(
        "observer directory ids",
        "pykraft's brokers fetch the metadata log without a replica directory id (KIP-853 "
        "Fetch ReplicaDirectoryId, KIP-858 log directory ids), so DescribeQuorum shows none "
        "for observers",
        lambda text, _side: re.sub(r', "directoryId": "[A-Za-z0-9_-]{22}"', "", re.sub(
            r"^(\d+\t)[A-Za-z0-9_-]{22}(\t.*\tObserver)$", r"\1<dir-id>\2", text,
            flags=re.MULTILINE)),
    ),
    Known(
        "default synonyms of topic configs",
        "pykraft lists a DEFAULT_CONFIG synonym for a broker setting without a default "
        "(log.retention.ms=604800000); Kafka keeps that default in log.retention.hours and "
        "lists only synonyms from the config's own name on (ConfigHelper.configSynonyms)",
        _sub(r", DEFAULT_CONFIG:log\.retention\.ms=\d+", ""),
    ),
    Known(
        "replication throttles",
        "pykraft has no replication quotas: leader/follower.replication.throttled.rate are "
        "no dynamic broker configs of pykraft's, so kafka-reassign-partitions --verify fails "
        "when it clears the broker-level throttles (INVALID_REQUEST 'Cannot update "
        "follower.replication.throttled.rate dynamically')",
        _sub(r"^(exit) \d+\n((?:.*\n)*?Clearing broker-level throttles on brokers .*\n)"
             r"(?:.*\n?)*", r"\1 <exit>\n\2"),
    ),
    Known(
        "kraft topics without ELR fields",
        "pykraft's own kafka-topics, kraft topics, prints no Elr / LastKnownElr fields "
        "(pykraft has no eligible leader replicas, KIP-966, so its image holds none); "
        "Kafka's kafka-topics prints them, as it does against Kafka "
        "(test_pykraft_on_kafka.py)",
        lambda text, _side: text.replace("\tElr: \tLastKnownElr: ", ""),
    ),
)


def normalise(text: str, side: Side, extra: Sequence[Callable[[str, Side], str]] = ()) -> str:
    for rewrite in (*(rule.rewrite for rule in RULES), *extra):
        text = rewrite(text, side)
    return text


def differences(kafka: str, pykraft: str,
                extra: Sequence[Callable[[str, Side], str]] = ()) -> list[str]:
    """Unified-diff lines between the normalised outputs; empty when they agree."""
    return list(difflib.unified_diff(
        normalise(kafka, Side.KAFKA, extra).splitlines(),
        normalise(pykraft, Side.PYKRAFT, extra).splitlines(),
        fromfile="kafka", tofile="pykraft", lineterm="",
    ))


def pending(kafka: str, pykraft: str,
            extra: Sequence[Callable[[str, Side], str]] = ()) -> list[Known]:
    """The known differences that explain every remaining difference, fewest first; empty
    when the outputs agree without them or when something else differs too."""
    if not differences(kafka, pykraft, extra):
        return []
    for count in range(1, len(KNOWN) + 1):
        for chosen in itertools.combinations(KNOWN, count):
            if not differences(kafka, pykraft, [*extra, *(k.rewrite for k in chosen)]):
                return list(chosen)
    return []
