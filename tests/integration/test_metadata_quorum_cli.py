"""``kraft metadata-quorum describe`` against a live quorum, line by line."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner, Result

from cli.main import kraft
from deploy import LocalCluster

pytestmark = pytest.mark.timeout(120)

TIMESTAMP = r"\d{13}"
ZERO_DIRECTORY_ID = "AAAAAAAAAAAAAAAAAAAAAA"


def describe(bootstrap: str, *flags: str) -> Result:
    result = CliRunner().invoke(
        kraft, ["metadata-quorum", "--bootstrap-controller", bootstrap, "describe", *flags],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    return result


def test_describe_status_prints_the_live_quorum(quiet_cluster: LocalCluster) -> None:
    info = quiet_cluster.wait_caught_up()
    lines = describe(quiet_cluster.bootstrap_controllers, "--status").stdout.split("\n")
    assert lines[0] == f"ClusterId:              {quiet_cluster.cluster_id}"
    assert lines[1] == f"LeaderId:               {info.leader_id}"
    assert lines[2] == f"LeaderEpoch:            {info.leader_epoch}"
    high_watermark = re.fullmatch(r"HighWatermark: {10}(\d+)", lines[3])
    assert high_watermark is not None and int(high_watermark[1]) >= info.high_watermark >= 1
    assert lines[4] == "MaxFollowerLag:         0"
    assert re.fullmatch(r"MaxFollowerLagTimeMs: {3}\d+", lines[5])
    entries = []
    for voter in info.voters:  # in the leader's order, which the CLI keeps
        host, port = quiet_cluster.address(voter.replica_id)
        entries.append(f'{{"id": {voter.replica_id}, '
                       f'"endpoints": ["CONTROLLER://{host}:{port}"]}}')
    assert sorted(v.replica_id for v in info.voters) == quiet_cluster.node_ids
    assert lines[6] == "CurrentVoters:          [" + ", ".join(entries) + "]"
    assert lines[7] == "CurrentObservers:       []"
    assert lines[8:] == [""]


def test_describe_replication_prints_the_leader_then_the_followers(
    quiet_cluster: LocalCluster,
) -> None:
    info = quiet_cluster.wait_caught_up()
    end = info.leader.log_end_offset
    lines = describe(quiet_cluster.bootstrap_controllers, "--replication").stdout.split("\n")
    assert lines[0] == ("NodeId\tDirectoryId           \tLogEndOffset\tLag\tLastFetchTimestamp\t"
                        "LastCaughtUpTimestamp\tStatus  \t")
    rows = [line.split("\t") for line in lines[1:4]]
    assert [row[-2].rstrip() for row in rows] == ["Leader", "Follower", "Follower"]
    assert int(rows[0][0]) == info.leader_id
    assert sorted(int(row[0]) for row in rows) == quiet_cluster.node_ids
    for row in rows:
        assert len(row) == 8 and row[-1] == ""  # a tab after the last column too
        assert row[1] == ZERO_DIRECTORY_ID
        assert int(row[2]) >= end and row[3].rstrip() == "0"
        assert re.fullmatch(TIMESTAMP + " *", row[4]) and re.fullmatch(TIMESTAMP + " *", row[5])
    widths = [len(cell) for cell in lines[0].split("\t")]
    assert all([len(cell) for cell in row] == widths for row in rows)
    assert lines[4:] == [""]


def test_describe_finds_the_leader_through_a_follower_alone(quiet_cluster: LocalCluster) -> None:
    leader = quiet_cluster.leader()
    follower = next(n for n in quiet_cluster.node_ids if n != leader)
    host, port = quiet_cluster.address(follower)
    lines = describe(f"{host}:{port}", "--status").stdout.splitlines()
    assert lines[1] == f"LeaderId:               {leader}"


def test_describe_replication_human_readable_prints_milliseconds_ago(
    quiet_cluster: LocalCluster,
) -> None:
    lines = describe(quiet_cluster.bootstrap_controllers, "--replication",
                     "--human-readable").stdout.splitlines()
    for line in lines[1:]:
        cells = line.split("\t")
        assert re.fullmatch(r"\d+ ms ago *", cells[4]), cells
        assert re.fullmatch(r"\d+ ms ago *", cells[5]), cells


def test_bootstrap_server_at_a_controller_listener_fails_with_kafkas_endpoint_error(
    quiet_cluster: LocalCluster,
) -> None:
    result = CliRunner().invoke(
        kraft, ["metadata-quorum", "--bootstrap-server", quiet_cluster.bootstrap_controllers,
                "describe", "--replication"],
        catch_exceptions=False,
    )
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == (
        "MISMATCHED_ENDPOINT_TYPE: The request was sent to an endpoint of type CONTROLLER, "
        "but we wanted an endpoint of type BROKER\n"
    )
