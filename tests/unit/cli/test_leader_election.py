"""``kraft leader-election``: the JSON file, the request, Kafka's output lines, option
errors, and one preferred election against a controller and two brokers in-process."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
from click.testing import CliRunner

from broker.client import Admin, KafkaError, NewTopic
from broker.client.errors import error_from_code
from cli.leader_election import (
    ElectionOutcome,
    LeaderElectionError,
    elect_leaders,
    election_outcome,
    leader_election,
    parse_election_json,
)
from quorum.controller.image import MetadataImage, TopicPartition
from quorum.wire.error_codes import Errors
from tests.unit.node.nodes import (
    controller_and_brokers,
    controller_image_until,
    wait_for_leader,
)

TP = TopicPartition


def test_the_json_file_names_partitions_and_duplicates_are_refused() -> None:
    text = '{"partitions":[{"topic":"foo","partition":1},{"topic":"bar","partition":0}]}'
    assert parse_election_json(text) == (TP("foo", 1), TP("bar", 0))
    with pytest.raises(LeaderElectionError, match="duplicate partitions: foo-1"):
        parse_election_json('{"partitions":[{"topic":"foo","partition":1},'
                            '{"topic":"foo","partition":1}]}')


@pytest.mark.parametrize(("text", "message"), [
    ("{", "not valid JSON"),
    ('{"topics":[]}', 'missing "partitions" field'),
    ('{"partitions":[]}', 'non-empty "partitions" list'),
    ('{"partitions":[{"partition":1}]}', 'entry 0 needs a "topic" name'),
    ('{"partitions":[{"topic":"t","partition":-1}]}', 'entry 0 needs a "partition" number'),
])
def test_a_bad_json_file_is_refused_with_the_reason(text: str, message: str) -> None:
    with pytest.raises(LeaderElectionError, match=message):
        parse_election_json(text)


def results(
    *outcomes: tuple[str, int, Errors, str | None],
) -> dict[TopicPartition, KafkaError | None]:
    """Per-partition results as the admin client reads them from an ElectLeaders answer."""
    return {
        TP(topic, index): None if error is Errors.NONE else error_from_code(
            error, message, context=f"{topic}-{index}"
        )
        for topic, index, error, message in outcomes
    }


def test_the_output_has_kafkas_success_noop_and_failure_lines() -> None:
    outcome = election_outcome("PREFERRED", results(
        ("t", 1, Errors.NONE, None), ("t", 0, Errors.NONE, None),
        ("t", 2, Errors.ELECTION_NOT_NEEDED, None),
        ("u", 0, Errors.PREFERRED_LEADER_NOT_AVAILABLE, None),
        ("nope", 3, Errors.UNKNOWN_TOPIC_OR_PARTITION, "No such partition nope-3"),
    ))
    assert outcome == ElectionOutcome((
        "Successfully completed leader election (PREFERRED) for partitions t-0, t-1",
        "Valid replica already elected for partitions t-2",
        "Error completing leader election (PREFERRED) for partition: nope-3: "
        "UNKNOWN_TOPIC_OR_PARTITION: No such partition nope-3",
        "Error completing leader election (PREFERRED) for partition: u-0: "
        "PREFERRED_LEADER_NOT_AVAILABLE",
    ), failed=2)
    assert election_outcome("UNCLEAN", results()) == ElectionOutcome(())


@pytest.mark.parametrize(("args", "message"), [
    (["--all-topic-partitions"], "Missing required option(s): election-type"),
    (["--election-type", "fair", "--all-topic-partitions"], "Invalid election type fair"),
    (["--election-type", "preferred"], "One and only one of the following options is "
     "required: topic, all-topic-partitions, path-to-json-file"),
    (["--election-type", "preferred", "--all-topic-partitions", "--topic", "t"],
     "One and only one"),
    (["--election-type", "preferred", "--topic", "t"], "Missing required option(s): partition"),
    (["--election-type", "preferred", "--all-topic-partitions", "--partition", "1"],
     "Option partition is only allowed if topic is used"),
])
def test_option_errors_are_kafkas_and_exit_1(args: list[str], message: str) -> None:
    result = CliRunner().invoke(leader_election, ["--bootstrap-controller", "localhost:1", *args])
    assert result.exit_code == 1
    assert message in result.output


def test_exactly_one_of_bootstrap_server_and_bootstrap_controller_is_required() -> None:
    kind = ["--election-type", "preferred", "--all-topic-partitions"]
    result = CliRunner().invoke(leader_election, kind)
    assert result.exit_code == 1
    assert "Missing required option(s): bootstrap-server" in result.output
    result = CliRunner().invoke(leader_election, [
        "--bootstrap-server", "localhost:1", "--bootstrap-controller", "localhost:2", *kind,
    ])
    assert result.exit_code == 1
    assert "Only one of --bootstrap-server or --bootstrap-controller" in result.output


def test_a_missing_or_bad_json_file_fails_before_connecting(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"partitions":[{"topic":"t"}]}')
    for path, message in ((bad, 'needs a "partition" number'), (tmp_path / "no", "Cannot read")):
        result = CliRunner().invoke(leader_election, [
            "--bootstrap-controller", "localhost:1", "--election-type", "PREFERRED",
            "--path-to-json-file", str(path),
        ])
        assert result.exit_code == 1 and message in result.output


# -- against a running cluster ------------------------------------------------------------



def led_by(image: MetadataImage, broker_id: int) -> list[TopicPartition]:
    return [TP(t.name, i) for t, i, p in image.iter_partitions() if p.leader == broker_id]


async def test_a_preferred_election_names_the_partitions_whose_preferred_leader_is_gone(
    tmp_path: Path,
) -> None:
    port, controller, (first, second) = controller_and_brokers(tmp_path, (100, 101))
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            await nursery.start(controller.run)
            await wait_for_leader([controller])
            async with trio.open_nursery() as running, Admin(
                {"bootstrap.controllers": f"127.0.0.1:{port}"}
            ) as admin:
                for broker in (first, second):
                    await running.start(broker.run)
                await admin.create_topics(
                    [NewTopic(name="orders", num_partitions=2, replication_factor=2)]
                )
                created = await controller_image_until(controller, lambda i: len(led_by(i, 100)) == 1)
                [gone] = led_by(created, 100)
                [stays] = led_by(created, 101)
                first.stop()  # controlled shutdown: broker 101 takes over 100's partition
                await controller_image_until(controller, lambda i: not led_by(i, 100))
                named = await elect_leaders(admin, "PREFERRED", [gone, stays])
                everything = await elect_leaders(admin, "PREFERRED", None)
                second.stop()
            controller.stop()
    failure = (f"Error completing leader election (PREFERRED) for partition: {gone}: "
               "PREFERRED_LEADER_NOT_AVAILABLE")
    assert named == ElectionOutcome(
        (f"Valid replica already elected for partitions {stays}", failure), failed=1
    )
    # over every partition the controller leaves out those that need nothing
    assert everything == ElectionOutcome((failure,), failed=1)
