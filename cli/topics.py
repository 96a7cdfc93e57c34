"""``kraft topics``: Kafka's ``kafka-topics.sh`` against the controllers.

``--create``, ``--list``, ``--describe``, ``--alter --partitions`` and
``--delete`` with Kafka's option names and output lines. Requests go to the
active controller through ``--bootstrap-controller``, or to a broker through
``--bootstrap-server`` (the broker forwards them to the active controller),
sent by the client library's ``Admin`` (``--command-config``: its settings,
for example ``default.api.timeout.ms``).
``--describe`` reads the committed image of the active controller or of that
broker (PykraftDescribeImage; a broker's may trail the controller's by the
records it has not fetched yet; a cluster that does not serve it, Apache Kafka,
is asked with Kafka's Admin calls instead) and prints Kafka's layout; with
``--unavailable-partitions`` only partitions without a leader,
``--under-replicated-partitions`` only those whose ISR is smaller than the
replica set, ``--under-min-isr-partitions`` only those below their topic's
``min.insync.replicas``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final, NoReturn

import click

from broker.client import (
    Admin,
    ConfigResource,
    ConfigSource,
    KafkaError,
    NewPartitions,
    NewTopic,
    ResourceType,
    TopicPartition,
)
from cli.admin_target import admin_config, run_admin
from cli.console import fail
from quorum.wire.error_codes import Errors
from quorum.wire.uuids import uuid_to_str

__all__ = ["describe_lines", "image_from_admin_calls", "topics"]

_ERROR: Final = "Error while executing topic command : "


def _partition_filter(
    partition: dict[str, Any], min_isr: int, *, unavailable: bool, under_replicated: bool,
    under_min_isr: bool,
) -> bool:
    if unavailable and partition["leader"] != -1:
        return False
    if under_replicated and len(partition["isr"]) >= len(partition["replicas"]):
        return False
    return not (under_min_isr and len(partition["isr"]) >= min_isr)


def describe_lines(
    image: dict[str, Any],
    topic: str | None = None,
    *,
    unavailable: bool = False,
    under_replicated: bool = False,
    under_min_isr: bool = False,
) -> list[str]:
    """kafka-topics' describe output for an image in ``image_to_json`` form."""
    configs = {
        c["resourceName"]: c["configs"] for c in image["configs"] if c["resourceType"] == "TOPIC"
    }
    filtered = unavailable or under_replicated or under_min_isr
    lines: list[str] = []
    for entry in image["topics"]:
        if topic is not None and entry["name"] != topic:
            continue
        name, topic_configs = entry["name"], configs.get(entry["name"], {})
        min_isr = int(topic_configs.get("min.insync.replicas", "1"))
        partitions = [
            p for p in entry["partitions"]
            if not filtered or _partition_filter(
                p, min_isr, unavailable=unavailable, under_replicated=under_replicated,
                under_min_isr=under_min_isr,
            )
        ]
        if not filtered:
            factor = len(entry["partitions"][0]["replicas"]) if entry["partitions"] else 0
            config_text = ",".join(f"{k}={v}" for k, v in sorted(topic_configs.items()))
            lines.append(
                f"Topic: {name}\tTopicId: {entry['topicId']}\tPartitionCount: "
                f"{len(entry['partitions'])}\tReplicationFactor: {factor}\tConfigs: {config_text}"
            )
        for p in partitions:
            leader = "none" if p["leader"] == -1 else str(p["leader"])
            lines.append(
                f"\tTopic: {name}\tPartition: {p['partition']}\tLeader: {leader}\t"
                f"Replicas: {_ids(p['replicas'])}\tIsr: {_ids(p['isr'])}"
                + (
                    f"\tAdding Replicas: {_ids(p['addingReplicas'])}\tRemoving Replicas: "
                    f"{_ids(p['removingReplicas'])}"
                    if p["addingReplicas"] or p["removingReplicas"] else ""
                )
            )
    return lines


def _ids(values: Iterable[int]) -> str:
    return ",".join(str(v) for v in values)


def _configs(pairs: tuple[str, ...]) -> dict[str, str]:
    result = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            fail(f"Invalid topic config: all configs to be added must be in the format \"key=val\": {pair}")
        result[key.strip()] = value.strip()
    return result


def _command_failed(message: str) -> NoReturn:
    """A command the cluster refused: like Kafka's TopicCommand, the error on stdout and
    exit status 1 (only bad options go to stderr)."""
    click.echo(message)
    raise click.exceptions.Exit(1)


def _check(outcome: dict[str, KafkaError | None], topic: str) -> None:
    error = outcome.get(topic)
    if error is not None:
        name = error.error.name if error.error is not None else error.name
        _command_failed(f"{_ERROR}{error.server_message or name} (topic {topic}: {name})")


def _run(config: dict[str, str], body: Any) -> Any:
    try:
        return run_admin(config, body)
    except KafkaError as exc:
        _command_failed(f"{_ERROR}{exc}")


@click.command(name="topics", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--bootstrap-server", help="Broker host:port list (the broker forwards changes).")
@click.option("--bootstrap-controller", help="Controller host:port list.")
@click.option("--command-config", help="Property file containing configs to be passed to Admin Client.")
@click.option("--create", "action", flag_value="create", help="Create a new topic.")
@click.option("--list", "action", flag_value="list", help="List all topics.")
@click.option("--describe", "action", flag_value="describe", help="Describe topics.")
@click.option("--alter", "action", flag_value="alter", help="Add partitions to a topic.")
@click.option("--delete", "action", flag_value="delete", help="Delete a topic.")
@click.option("--topic", help="The topic to create, alter, describe or delete.")
@click.option("--partitions", type=int, help="Number of partitions (create, alter).")
@click.option("--replication-factor", type=int, help="Replication factor (create).")
@click.option("--config", "config_pairs", multiple=True, help="A topic config key=value (create).")
@click.option("--if-not-exists", is_flag=True, help="Create only if absent.")
@click.option("--unavailable-partitions", is_flag=True, help="Only partitions without a leader.")
@click.option("--under-replicated-partitions", is_flag=True, help="Only partitions whose ISR < replicas.")
@click.option("--under-min-isr-partitions", is_flag=True, help="Only partitions below min.insync.replicas.")
def topics(
    bootstrap_server: str | None, bootstrap_controller: str | None, command_config: str | None,
    action: str | None, topic: str | None, partitions: int | None,
    replication_factor: int | None, config_pairs: tuple[str, ...], if_not_exists: bool,
    unavailable_partitions: bool, under_replicated_partitions: bool,
    under_min_isr_partitions: bool,
) -> None:
    """Create, delete, describe, or change a topic (kafka-topics.sh)."""
    both = "Only one of --bootstrap-server or --bootstrap-controller must be specified"
    config = admin_config(server=bootstrap_server, controller=bootstrap_controller,
                          command_config=command_config, both=both, neither=both)
    if action is None:
        fail("Command must include exactly one action: --list, --describe, --create, --alter or --delete")
    if action in ("create", "alter", "delete") and not topic:
        fail(f"Missing required argument \"[topic]\" for --{action}")
    if action == "create":
        assert topic is not None
        new = NewTopic(
            name=topic, num_partitions=-1 if partitions is None else partitions,
            replication_factor=-1 if replication_factor is None else replication_factor,
            configs=_configs(config_pairs),
        )
        outcome = _run(config, lambda admin: admin.create_topics([new], raise_on_error=False))
        error = outcome.get(topic)
        if if_not_exists and error is not None and error.error is Errors.TOPIC_ALREADY_EXISTS:
            return
        _check(outcome, topic)
        click.echo(f"Created topic {topic}.")
    elif action == "delete":
        assert topic is not None
        _check(_run(config, lambda admin: admin.delete_topics([topic], raise_on_error=False)),
               topic)
    elif action == "alter":
        assert topic is not None
        if partitions is None:
            fail("--alter needs --partitions (the new partition count)")
        grow = {topic: NewPartitions(total_count=partitions)}
        _check(_run(config, lambda admin: admin.create_partitions(grow, raise_on_error=False)),
               topic)
    else:
        image = _run(config, _image)
        if action == "list":
            for entry in image.get("topics", []):
                click.echo(entry["name"])
            return
        if topic is not None and all(t["name"] != topic for t in image.get("topics", [])):
            _command_failed(f"{_ERROR}Topic '{topic}' does not exist as expected")
        for line in describe_lines(
            image, topic, unavailable=unavailable_partitions,
            under_replicated=under_replicated_partitions, under_min_isr=under_min_isr_partitions,
        ):
            click.echo(line)


async def _image(admin: Admin) -> dict[str, Any]:
    try:
        return await admin.describe_image()
    except KafkaError as exc:
        if exc.error is not Errors.UNSUPPORTED_VERSION:
            raise
    # a cluster without pykraft's own DescribeImage (Apache Kafka): the same view from
    # Kafka's Admin calls, as kafka-topics builds it
    return await image_from_admin_calls(admin)


async def image_from_admin_calls(admin: Admin) -> dict[str, Any]:
    """The topics part of an image (``image_to_json`` form) from Metadata, DescribeConfigs
    and ListPartitionReassignments. Internal topics are listed, as kafka-topics lists them
    unless ``--exclude-internal``; a topic's configs are those not at their default (what
    kafka-topics prints: its own, and cluster-wide dynamic ones)."""
    names = await admin.list_topics(include_internal=True)
    descriptions = await admin.describe_topics(names) if names else {}
    resources = [ConfigResource(ResourceType.TOPIC, name) for name in names]
    configs = await admin.describe_configs(resources) if resources else {}
    moving = await admin.list_partition_reassignments()
    topics = []
    for name in names:
        description = descriptions[name]
        partitions = []
        for p in sorted(description.partitions, key=lambda p: p.partition):
            reassignment = moving.get(TopicPartition(name, p.partition))
            partitions.append({
                "partition": p.partition,
                "leader": -1 if p.leader is None else p.leader.node_id,
                "replicas": list(p.replicas),
                "isr": list(p.isr),
                "addingReplicas": [] if reassignment is None
                else list(reassignment.adding_replicas),
                "removingReplicas": [] if reassignment is None
                else list(reassignment.removing_replicas),
            })
        topics.append({"name": name, "topicId": uuid_to_str(description.topic_id),
                       "partitions": partitions})
    return {
        "topics": topics,
        "configs": [
            {"resourceType": "TOPIC", "resourceName": resource.name,
             "configs": {key: entry.value for key, entry in entries.items()
                         if entry.source is not ConfigSource.DEFAULT_CONFIG
                         and entry.value is not None}}
            for resource, entries in configs.items()
        ],
    }
