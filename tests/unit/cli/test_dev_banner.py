"""``kraft dev``'s banner: the console tool lines are commands that run as printed."""

from __future__ import annotations

import shlex

from cli.console_consumer import ConsumerOptions, consumer_plan
from cli.console_producer import ProducerOptions, producer_plan
from cli.dev import group_lines, produce_consume_lines
from cli.main import kraft

SERVERS = "localhost:19094,localhost:19095"


def commands() -> dict[str, list[str]]:
    found = {}
    for line in produce_consume_lines(SERVERS):
        words = shlex.split(line)
        if words[:1] == ["kraft"]:
            found[words[1]] = words[2:]
    return found


def options(words: list[str]) -> dict[str, object]:
    """``--name value`` pairs (repeated ones collected), as click would hand them over."""
    values: dict[str, object] = {}
    for name, value in zip(words[::2], words[1::2], strict=True):
        key = name.removeprefix("--").replace("-", "_")
        if key == "property":
            values["properties"] = (*values.get("properties", ()), value)  # type: ignore[misc]
        else:
            values[key] = value
    return values


def test_the_banner_shows_a_producer_and_a_consumer_on_the_real_brokers() -> None:
    found = commands()
    assert sorted(found) == ["console-consumer", "console-producer"]
    assert set(found) <= set(kraft.commands)
    producer = producer_plan(ProducerOptions(**options(found["console-producer"])))  # type: ignore[arg-type]
    assert producer.properties["bootstrap.servers"] == SERVERS
    assert producer.reader.parse_key and producer.reader.key_separator == ":"
    consumer_words = [w for w in found["console-consumer"] if w != "--from-beginning"]
    consumer = consumer_plan(ConsumerOptions(  # type: ignore[arg-type]
        from_beginning=True, **options(consumer_words)))
    assert consumer.properties["bootstrap.servers"] == SERVERS
    assert consumer.formatter.print_key


def test_the_banner_shows_a_group_consumer_and_its_description() -> None:
    found = {shlex.split(line)[1]: shlex.split(line)[2:]
             for line in group_lines(SERVERS) if line.lstrip().startswith("kraft ")}
    assert sorted(found) == ["console-consumer", "consumer-groups"]
    assert set(found) <= set(kraft.commands)
    consumer_words = [w for w in found["console-consumer"] if w != "--from-beginning"]
    consumer = consumer_plan(ConsumerOptions(  # type: ignore[arg-type]
        from_beginning=True, **options(consumer_words)))
    assert consumer.properties["group.id"] == "demo-group"
    assert found["consumer-groups"] == [
        "--bootstrap-server", SERVERS, "--describe", "--group", "demo-group"
    ]
