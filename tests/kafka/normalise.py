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
import re
from collections.abc import Callable, Sequence
from typing import Final

import attrs

__all__ = ["KNOWN", "RULES", "Known", "Rule", "Side", "differences", "normalise", "pending"]


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


def pending(kafka: str, pykraft: str) -> list[Known]:
    """The known differences that explain every remaining difference, fewest first; empty
    when the outputs agree without them or when something else differs too."""
    if not differences(kafka, pykraft):
        return []
    for count in range(1, len(KNOWN) + 1):
        for chosen in itertools.combinations(KNOWN, count):
            if not differences(kafka, pykraft, [k.rewrite for k in chosen]):
                return list(chosen)
    return []
