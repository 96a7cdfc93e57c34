"""``kraft leader-election``: Kafka's ``kafka-leader-election.sh`` for pykraft.

``--election-type PREFERRED|UNCLEAN`` with exactly one of
``--all-topic-partitions``, ``--topic T --partition N`` or
``--path-to-json-file F`` (``{"partitions":[{"topic":"foo","partition":1}]}``),
sent as ElectLeaders to the active controller (``--bootstrap-controller``;
Kafka's tool goes through ``--bootstrap-server``). Kafka's option checks and
output lines; a partition that could not be elected makes the command exit 1.
With ``--all-topic-partitions`` the controller leaves out the partitions that
need no election, so nothing may be printed, as with Kafka.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

import attrs
import click
import trio

from cli.console import fail
from cli.metadata_quorum import _bootstrap
from quorum.controller.image import TopicPartition, partitions_by_topic
from quorum.controller_client import ControllerChannel, ControllerUnavailableError
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    ElectLeadersRequest,
    ElectLeadersRequestTopicPartitions,
    ElectLeadersResponse,
)

__all__ = [
    "ELECTION_TYPES",
    "ElectionOutcome",
    "LeaderElectionError",
    "elect_leaders",
    "election_outcome",
    "election_request",
    "leader_election",
    "parse_election_json",
]

# Kafka's ElectionType values, as ElectLeaders carries them
ELECTION_TYPES: Final = {"PREFERRED": 0, "UNCLEAN": 1}
_TIMEOUT_MS: Final = 30_000


class LeaderElectionError(Exception):
    """Bad input or a failed request; the message is for the operator."""


@attrs.frozen
class ElectionOutcome:
    """Lines for stdout, and the partitions that could not be elected."""

    lines: tuple[str, ...]
    failed: int = 0


def parse_election_json(text: str) -> tuple[TopicPartition, ...]:
    """The partitions of ``{"partitions":[{"topic":"foo","partition":1}]}``, in order."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LeaderElectionError(f"Replica election data is not valid JSON: {exc}") from None
    if not isinstance(doc, dict) or "partitions" not in doc:
        raise LeaderElectionError('Replica election data is missing "partitions" field')
    entries = doc["partitions"]
    if not isinstance(entries, list) or not entries:
        raise LeaderElectionError('Replica election data needs a non-empty "partitions" list')
    partitions = [_partition(i, entry) for i, entry in enumerate(entries)]
    twice = sorted({tp for tp in partitions if partitions.count(tp) > 1})
    if twice:
        raise LeaderElectionError(
            "Replica election data contains duplicate partitions: " + ",".join(map(str, twice))
        )
    return tuple(partitions)


def _partition(i: int, entry: Any) -> TopicPartition:
    topic = entry.get("topic") if isinstance(entry, dict) else None
    index = entry.get("partition") if isinstance(entry, dict) else None
    if not isinstance(topic, str) or not topic:
        raise LeaderElectionError(f'partitions entry {i} needs a "topic" name')
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise LeaderElectionError(f'partitions entry {i} needs a "partition" number')
    return TopicPartition(topic, index)


def election_request(
    election_type: str, partitions: Sequence[TopicPartition] | None
) -> ElectLeadersRequest:
    """ElectLeaders for ``partitions`` (None: every partition), grouped by topic."""
    topics = None
    if partitions is not None:
        topics = tuple(
            ElectLeadersRequestTopicPartitions(topic=t, partitions=ps)
            for t, ps in partitions_by_topic(partitions).items()
        )
    return ElectLeadersRequest(
        election_type=ELECTION_TYPES[election_type], topic_partitions=topics,
        timeout_ms=_TIMEOUT_MS,
    )


def election_outcome(election_type: str, response: ElectLeadersResponse) -> ElectionOutcome:
    """Kafka's lines: the elected partitions, those that needed nothing, each failure."""
    if response.error_code != Errors.NONE:
        raise LeaderElectionError(
            f"Leader election failed: {Errors.from_code(response.error_code).name}"
        )
    elected, noop, failed = [], [], []
    for topic in response.replica_election_results:
        for result in topic.partition_result:
            tp = TopicPartition(topic.topic, result.partition_id)
            if result.error_code == Errors.NONE:
                elected.append(tp)
            elif result.error_code == Errors.ELECTION_NOT_NEEDED:
                noop.append(tp)
            else:
                error = Errors.from_code(result.error_code).name
                reason = f"{error}: {result.error_message}" if result.error_message else error
                failed.append((tp, reason))
    lines = []
    if elected:
        lines.append(
            f"Successfully completed leader election ({election_type}) for partitions "
            + ", ".join(map(str, sorted(elected)))
        )
    if noop:
        lines.append("Valid replica already elected for partitions "
                     + ", ".join(map(str, sorted(noop))))
    lines.extend(
        f"Error completing leader election ({election_type}) for partition: {tp}: {reason}"
        for tp, reason in sorted(failed)
    )
    return ElectionOutcome(tuple(lines), len(failed))


async def elect_leaders(
    channel: ControllerChannel, election_type: str,
    partitions: Sequence[TopicPartition] | None,
) -> ElectionOutcome:
    response = await channel.call(election_request(election_type, partitions))
    return election_outcome(election_type, response)


def _checked(
    bootstrap: str | None, election_type: str | None, all_partitions: bool,
    topic: str | None, partition: int | None, json_file: str | None,
) -> str:
    """The election type, upper-case, once the options make sense (Kafka's checks)."""
    missing = [name for name, value in (("bootstrap-controller", bootstrap),
                                        ("election-type", election_type)) if not value]
    if missing:
        fail(f"Missing required option(s): {', '.join(missing)}")
    assert election_type is not None
    if election_type.upper() not in ELECTION_TYPES:
        fail(f"Invalid election type {election_type}: choose PREFERRED or UNCLEAN")
    if [topic is not None, all_partitions, json_file is not None].count(True) != 1:
        fail("One and only one of the following options is required: "
             "topic, all-topic-partitions, path-to-json-file")
    if topic is not None and partition is None:
        fail("Missing required option(s): partition")
    if topic is None and partition is not None:
        fail("Option partition is only allowed if topic is used")
    return election_type.upper()


def _partitions(
    topic: str | None, partition: int | None, json_file: str | None
) -> tuple[TopicPartition, ...] | None:
    if json_file is not None:
        try:
            with open(json_file, encoding="utf-8") as f:
                return parse_election_json(f.read())
        except OSError as exc:
            raise LeaderElectionError(f"Cannot read {json_file}: {exc.strerror}") from None
    if topic is not None and partition is not None:
        return (TopicPartition(topic, partition),)
    return None  # --all-topic-partitions


def _run(bootstrap: str, election_type: str,
         partitions: tuple[TopicPartition, ...] | None) -> ElectionOutcome:
    addresses = _bootstrap(bootstrap, "--bootstrap-controller")

    async def main() -> ElectionOutcome:
        async with ControllerChannel(addresses) as channel:
            return await elect_leaders(channel, election_type, partitions)

    try:
        return trio.run(main)
    except ControllerUnavailableError as exc:
        raise LeaderElectionError(str(exc)) from None


@click.command(name="leader-election", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--bootstrap-controller", help="Controller host:port list.")
@click.option("--election-type", help="PREFERRED or UNCLEAN.")
@click.option("--all-topic-partitions", is_flag=True, help="Every partition that needs one.")
@click.option("--topic", help="The topic of the one partition to elect a leader for.")
@click.option("--partition", type=int, help="The partition (with --topic).")
@click.option("--path-to-json-file", help='{"partitions":[{"topic":"foo","partition":1}]}')
def leader_election(
    bootstrap_controller: str | None, election_type: str | None, all_topic_partitions: bool,
    topic: str | None, partition: int | None, path_to_json_file: str | None,
) -> None:
    """Elect partition leaders: preferred or unclean (kafka-leader-election.sh)."""
    kind = _checked(bootstrap_controller, election_type, all_topic_partitions, topic,
                    partition, path_to_json_file)
    assert bootstrap_controller is not None
    try:
        outcome = _run(bootstrap_controller, kind,
                       _partitions(topic, partition, path_to_json_file))
    except LeaderElectionError as exc:
        fail(str(exc))
    for line in outcome.lines:
        click.echo(line)
    if outcome.failed:
        fail(f"{outcome.failed} replica(s) could not be elected")
