"""``kraft leader-election``: Kafka's ``kafka-leader-election.sh`` for pykraft.

``--election-type PREFERRED|UNCLEAN`` with exactly one of
``--all-topic-partitions``, ``--topic T --partition N`` or
``--path-to-json-file F`` (``{"partitions":[{"topic":"foo","partition":1}]}``),
sent as ElectLeaders by the client library's ``Admin`` through brokers
(``--bootstrap-server``, as Kafka's tool) or straight to the active controller
(``--bootstrap-controller``); ``--admin.config`` gives the admin client's
settings. Kafka's option checks and
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

from broker.client import Admin, ElectionType, KafkaError
from cli.admin_target import admin_config, client_partition, image_partition, run_admin
from cli.console import fail
from quorum.controller.image import TopicPartition
from quorum.wire.error_codes import Errors

__all__ = [
    "ELECTION_TYPES",
    "ElectionOutcome",
    "LeaderElectionError",
    "elect_leaders",
    "election_outcome",
    "leader_election",
    "parse_election_json",
]

ELECTION_TYPES: Final = {t.name: t for t in ElectionType}


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


def election_outcome(
    election_type: str, results: dict[TopicPartition, KafkaError | None]
) -> ElectionOutcome:
    """Kafka's lines: the elected partitions, those that needed nothing, each failure."""
    elected, noop, failed = [], [], []
    for tp, error in results.items():
        if error is None:
            elected.append(tp)
        elif error.error is Errors.ELECTION_NOT_NEEDED:
            noop.append(tp)
        else:
            name = error.error.name if error.error is not None else error.name
            reason = f"{name}: {error.server_message}" if error.server_message else name
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
    admin: Admin, election_type: str, partitions: Sequence[TopicPartition] | None,
) -> ElectionOutcome:
    """ElectLeaders for ``partitions`` (None: every partition that needs one)."""
    wanted = None if partitions is None else [client_partition(tp) for tp in partitions]
    try:
        results = await admin.elect_leaders(ELECTION_TYPES[election_type], wanted,
                                            raise_on_error=False)
    except KafkaError as exc:
        raise LeaderElectionError(f"Leader election failed: {exc}") from None
    return election_outcome(
        election_type, {image_partition(tp): error for tp, error in results.items()}
    )


def _checked(
    bootstrap: str | None, election_type: str | None, all_partitions: bool,
    topic: str | None, partition: int | None, json_file: str | None,
) -> str:
    """The election type, upper-case, once the options make sense (Kafka's checks)."""
    missing = [name for name, value in (("bootstrap-server", bootstrap),
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


@click.command(name="leader-election", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--bootstrap-server", help="Broker host:port list.")
@click.option("--bootstrap-controller", help="Controller host:port list.")
@click.option("--admin.config", "admin_properties",
              help="Property file containing configs to be passed to Admin Client.")
@click.option("--election-type", help="PREFERRED or UNCLEAN.")
@click.option("--all-topic-partitions", is_flag=True, help="Every partition that needs one.")
@click.option("--topic", help="The topic of the one partition to elect a leader for.")
@click.option("--partition", type=int, help="The partition (with --topic).")
@click.option("--path-to-json-file", help='{"partitions":[{"topic":"foo","partition":1}]}')
def leader_election(
    bootstrap_server: str | None, bootstrap_controller: str | None,
    admin_properties: str | None, election_type: str | None, all_topic_partitions: bool,
    topic: str | None, partition: int | None, path_to_json_file: str | None,
) -> None:
    """Elect partition leaders: preferred or unclean (kafka-leader-election.sh)."""
    kind = _checked(bootstrap_server or bootstrap_controller, election_type,
                    all_topic_partitions, topic, partition, path_to_json_file)
    config = admin_config(
        server=bootstrap_server, controller=bootstrap_controller,
        command_config=admin_properties,
        both="Only one of --bootstrap-server or --bootstrap-controller must be specified",
        neither="Missing required option(s): bootstrap-server",
    )
    try:
        partitions = _partitions(topic, partition, path_to_json_file)
        outcome = run_admin(config, lambda admin: elect_leaders(admin, kind, partitions))
    except (LeaderElectionError, KafkaError) as exc:
        fail(str(exc))
    for line in outcome.lines:
        click.echo(line)
    if outcome.failed:
        fail(f"{outcome.failed} replica(s) could not be elected")
