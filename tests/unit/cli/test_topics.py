"""``kraft topics``: describe output from an image, and option errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from click.testing import CliRunner

from cli.topics import describe_lines, topics


def image_json() -> dict[str, Any]:
    def partition(index: int, leader: int, isr: list[int]) -> dict[str, Any]:
        return {
            "partition": index, "leader": leader, "leaderEpoch": 0, "partitionEpoch": 0,
            "replicas": [1, 2, 3], "isr": isr, "removingReplicas": [], "addingReplicas": [],
            "leaderRecoveryState": "RECOVERED",
        }

    return {
        "topics": [{
            "name": "orders", "topicId": "AAAAAAAAAAAAAAAAAAAAAQ",
            "partitions": [partition(0, 1, [1, 2, 3]), partition(1, -1, [2]), partition(2, 2, [2, 3])],
        }],
        "configs": [{"resourceType": "TOPIC", "resourceName": "orders",
                     "configs": {"min.insync.replicas": "2"}}],
    }


def test_describe_prints_kafkas_topic_and_partition_lines() -> None:
    assert describe_lines(image_json()) == [
        "Topic: orders\tTopicId: AAAAAAAAAAAAAAAAAAAAAQ\tPartitionCount: 3\tReplicationFactor: 3"
        "\tConfigs: min.insync.replicas=2",
        "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3",
        "\tTopic: orders\tPartition: 1\tLeader: none\tReplicas: 1,2,3\tIsr: 2",
        "\tTopic: orders\tPartition: 2\tLeader: 2\tReplicas: 1,2,3\tIsr: 2,3",
    ]


def test_unavailable_partitions_lists_only_leaderless_ones_without_the_topic_line() -> None:
    assert describe_lines(image_json(), unavailable=True) == [
        "\tTopic: orders\tPartition: 1\tLeader: none\tReplicas: 1,2,3\tIsr: 2",
    ]


def test_under_replicated_and_under_min_isr_filters_follow_the_isr() -> None:
    under = describe_lines(image_json(), under_replicated=True)
    assert [line.split("\t")[2] for line in under] == ["Partition: 1", "Partition: 2"]
    below_min = describe_lines(image_json(), under_min_isr=True)
    assert [line.split("\t")[2] for line in below_min] == ["Partition: 1"]


def test_a_command_without_an_action_or_topic_is_refused() -> None:
    runner = CliRunner()
    result = runner.invoke(topics, ["--bootstrap-controller", "localhost:1"])
    assert result.exit_code == 1
    assert "exactly one action" in result.output
    result = runner.invoke(topics, ["--bootstrap-controller", "localhost:1", "--create"])
    assert result.exit_code == 1
    assert "topic" in result.output


def test_exactly_one_of_bootstrap_server_and_bootstrap_controller_is_required() -> None:
    runner = CliRunner()
    for args in ([], ["--bootstrap-server", "localhost:1", "--bootstrap-controller", "localhost:2"]):
        result = runner.invoke(topics, [*args, "--list"])
        assert result.exit_code == 1
        assert "Only one of --bootstrap-server or --bootstrap-controller" in result.output


def test_a_broker_that_does_not_answer_is_reported_after_default_api_timeout_ms(
    tmp_path: Path,
) -> None:
    config = tmp_path / "admin.properties"
    config.write_text("default.api.timeout.ms=400\nretry.backoff.ms=20\n")
    result = CliRunner().invoke(topics, ["--bootstrap-server", "127.0.0.1:1", "--command-config",
                                         str(config), "--list"])
    assert result.exit_code == 1
    assert result.output.startswith(
        "Error while executing topic command : TimeoutException: Timed out waiting for a node "
        "assignment. Call: describeImage"
    )
    assert "127.0.0.1:1: cannot connect" in result.output


def test_a_bad_command_config_value_is_named(tmp_path: Path) -> None:
    config = tmp_path / "admin.properties"
    config.write_text("request.timeout.ms=soon\n")
    result = CliRunner().invoke(topics, ["--bootstrap-controller", "127.0.0.1:1",
                                         "--command-config", str(config), "--list"])
    assert result.exit_code == 1
    assert result.output == (
        "Invalid value soon for configuration request.timeout.ms: Not a number of type INT\n"
    )
