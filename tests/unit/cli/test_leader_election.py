"""``kraft leader-election``: the JSON file, the request, Kafka's output lines, option
errors, and one preferred election against a controller and two brokers in-process."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
from click.testing import CliRunner

from cli.leader_election import (
    ElectionOutcome,
    LeaderElectionError,
    elect_leaders,
    election_outcome,
    election_request,
    leader_election,
    parse_election_json,
)
from quorum.config.values import HostPort
from quorum.controller.image import MetadataImage, TopicPartition
from quorum.controller_client import ControllerChannel
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    CreateTopicsRequest,
    CreateTopicsRequestTopic,
    ElectLeadersRequestTopicPartitions,
    ElectLeadersResponse,
    ElectLeadersResponsePartitionResult,
    ElectLeadersResponseReplicaElectionResult,
)
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


def test_the_request_groups_partitions_by_topic_and_none_means_every_partition() -> None:
    request = election_request("UNCLEAN", [TP("b", 0), TP("a", 2), TP("a", 0)])
    assert request.election_type == 1
    assert request.topic_partitions == (
        ElectLeadersRequestTopicPartitions(topic="a", partitions=(0, 2)),
        ElectLeadersRequestTopicPartitions(topic="b", partitions=(0,)),
    )
    assert election_request("PREFERRED", None).topic_partitions is None


def response(*results: tuple[str, int, Errors, str | None]) -> ElectLeadersResponse:
    topics: dict[str, list[ElectLeadersResponsePartitionResult]] = {}
    for topic, index, error, message in results:
        topics.setdefault(topic, []).append(ElectLeadersResponsePartitionResult(
            partition_id=index, error_code=error, error_message=message))
    return ElectLeadersResponse(replica_election_results=tuple(
        ElectLeadersResponseReplicaElectionResult(topic=t, partition_result=tuple(r))
        for t, r in topics.items()
    ))


def test_the_output_has_kafkas_success_noop_and_failure_lines() -> None:
    outcome = election_outcome("PREFERRED", response(
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
    assert election_outcome("UNCLEAN", response()) == ElectionOutcome(())


def test_a_request_level_error_fails_the_command() -> None:
    with pytest.raises(LeaderElectionError, match="CLUSTER_AUTHORIZATION_FAILED"):
        election_outcome("PREFERRED", ElectLeadersResponse(
            error_code=Errors.CLUSTER_AUTHORIZATION_FAILED))


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
            async with trio.open_nursery() as running, ControllerChannel(
                [HostPort("127.0.0.1", port)]
            ) as channel:
                for broker in (first, second):
                    await running.start(broker.run)
                topic = CreateTopicsRequestTopic(name="orders", num_partitions=2,
                                                 replication_factor=2)
                await channel.call(CreateTopicsRequest(topics=(topic,)))
                created = await controller_image_until(controller, lambda i: len(led_by(i, 100)) == 1)
                [gone] = led_by(created, 100)
                [stays] = led_by(created, 101)
                first.stop()  # controlled shutdown: broker 101 takes over 100's partition
                await controller_image_until(controller, lambda i: not led_by(i, 100))
                named = await elect_leaders(channel, "PREFERRED", [gone, stays])
                everything = await elect_leaders(channel, "PREFERRED", None)
                second.stop()
            controller.stop()
    failure = (f"Error completing leader election (PREFERRED) for partition: {gone}: "
               "PREFERRED_LEADER_NOT_AVAILABLE")
    assert named == ElectionOutcome(
        (f"Valid replica already elected for partitions {stays}", failure), failed=1
    )
    # over every partition the controller leaves out those that need nothing
    assert everything == ElectionOutcome((failure,), failed=1)
