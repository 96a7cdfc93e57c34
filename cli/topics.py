"""``kraft topics``: Kafka's ``kafka-topics.sh`` against the controllers.

``--create``, ``--list``, ``--describe``, ``--alter --partitions`` and
``--delete`` with Kafka's option names and output lines. Requests go to the
active controller through ``--bootstrap-controller``, or to a broker through
``--bootstrap-server`` (the broker forwards them to the active controller).
``--describe`` reads the committed image of the active controller or of that
broker (PykraftDescribeImage; a broker's may trail the controller's by the
records it has not fetched yet) and prints Kafka's layout; with
``--unavailable-partitions`` only partitions without a leader,
``--under-replicated-partitions`` only those whose ISR is smaller than the
replica set, ``--under-min-isr-partitions`` only those below their topic's
``min.insync.replicas``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Final

import click
import trio

from cli.console import fail
from cli.metadata_quorum import _bootstrap
from quorum.client import ClientError, TrioKafkaConnection
from quorum.controller_client import ControllerChannel, ControllerUnavailableError
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    CreatePartitionsRequest,
    CreatePartitionsRequestTopic,
    CreateTopicsRequest,
    CreateTopicsRequestConfig,
    CreateTopicsRequestTopic,
    DeleteTopicsRequest,
)
from quorum.wire.messages.pykraft_describe_image import PykraftDescribeImageRequest

__all__ = ["describe_lines", "topics"]

_TIMEOUT_MS: Final = 30_000


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


def _configs(pairs: tuple[str, ...]) -> tuple[CreateTopicsRequestConfig, ...]:
    result = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            fail(f"Invalid topic config: all configs to be added must be in the format \"key=val\": {pair}")
        result.append(CreateTopicsRequestConfig(name=key.strip(), value=value.strip()))
    return tuple(result)


def _check(error_code: int, message: str | None, topic: str) -> None:
    if error_code != Errors.NONE:
        error = Errors.from_code(error_code)
        fail(f"Error while executing topic command : {message or error.name} (topic {topic}: {error.name})")


class _Target:
    """Where requests go: the active controller, or the first broker that answers."""

    def __init__(self, *, controllers: str | None, servers: str | None) -> None:
        if (controllers is None) == (servers is None):
            fail("Only one of --bootstrap-server or --bootstrap-controller must be specified")
        self.controllers = controllers
        self.servers = servers

    async def call(self, request: Any) -> Any:
        if self.controllers is not None:
            bootstrap = _bootstrap(self.controllers, "--bootstrap-controller")
            async with ControllerChannel(bootstrap) as channel:
                return await channel.call(request)
        assert self.servers is not None
        problems = []
        for address in _bootstrap(self.servers, "--bootstrap-server"):
            try:
                with trio.fail_after(_TIMEOUT_MS / 1000):
                    async with await TrioKafkaConnection.connect(address.host, address.port) as conn:
                        return await conn.request(request)
            except (ClientError, OSError, trio.TooSlowError) as exc:
                problems.append(f"{address}: {exc or type(exc).__name__}")
        raise ControllerUnavailableError(f"no broker answered ({'; '.join(problems)})")

    def run(self, request: Any) -> Any:
        try:
            return trio.run(self.call, request)
        except ControllerUnavailableError as exc:
            fail(f"Error while executing topic command : {exc}")


@click.command(name="topics", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--bootstrap-server", help="Broker host:port list (the broker forwards changes).")
@click.option("--bootstrap-controller", help="Controller host:port list.")
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
    bootstrap_server: str | None, bootstrap_controller: str | None, action: str | None,
    topic: str | None, partitions: int | None,
    replication_factor: int | None, config_pairs: tuple[str, ...], if_not_exists: bool,
    unavailable_partitions: bool, under_replicated_partitions: bool,
    under_min_isr_partitions: bool,
) -> None:
    """Create, delete, describe, or change a topic (kafka-topics.sh)."""
    target = _Target(controllers=bootstrap_controller, servers=bootstrap_server)
    if action is None:
        fail("Command must include exactly one action: --list, --describe, --create, --alter or --delete")
    if action in ("create", "alter", "delete") and not topic:
        fail(f"Missing required argument \"[topic]\" for --{action}")
    if action == "create":
        assert topic is not None
        request = CreateTopicsRequest(
            topics=(
                CreateTopicsRequestTopic(
                    name=topic, num_partitions=-1 if partitions is None else partitions,
                    replication_factor=-1 if replication_factor is None else replication_factor,
                    configs=_configs(config_pairs),
                ),
            ),
            timeout_ms=_TIMEOUT_MS,
        )
        [result] = target.run(request).topics
        if if_not_exists and result.error_code == Errors.TOPIC_ALREADY_EXISTS:
            return
        _check(result.error_code, result.error_message, topic)
        click.echo(f"Created topic {topic}.")
    elif action == "delete":
        assert topic is not None
        response = target.run(DeleteTopicsRequest(topic_names=(topic,), timeout_ms=_TIMEOUT_MS))
        [result] = response.responses
        _check(result.error_code, None, topic)
    elif action == "alter":
        assert topic is not None
        if partitions is None:
            fail("--alter needs --partitions (the new partition count)")
        request_p = CreatePartitionsRequest(
            topics=(CreatePartitionsRequestTopic(name=topic, count=partitions, assignments=None),),
            timeout_ms=_TIMEOUT_MS,
        )
        [result_p] = target.run(request_p).results
        _check(result_p.error_code, result_p.error_message, topic)
    else:
        response = target.run(PykraftDescribeImageRequest(include_image=True))
        image = json.loads(response.image_json or "{}")
        if action == "list":
            for entry in image.get("topics", []):
                click.echo(entry["name"])
            return
        if topic is not None and all(t["name"] != topic for t in image.get("topics", [])):
            fail(f"Error while executing topic command : Topic '{topic}' does not exist as expected")
        for line in describe_lines(
            image, topic, unavailable=unavailable_partitions,
            under_replicated=under_replicated_partitions, under_min_isr=under_min_isr_partitions,
        ):
            click.echo(line)
