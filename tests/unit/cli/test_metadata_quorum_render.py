"""``describe --status`` and ``--replication`` text, line by line, from hand-made responses.

The expected texts are Kafka's layouts (kraft-facts.md 6.1): eight ``Key:``
lines with values at column 24; a table whose cells are padded to the
column's widest cell and each followed by a tab, the last one too.
"""

from __future__ import annotations

import uuid

import pytest

from cli.quorum_render import (
    RelativeTimeError,
    pretty_print_table,
    relative_time_ms,
    render_replication,
    render_status,
)
from quorum.describe import quorum_info_from_response
from quorum.wire.messages import (
    DescribeQuorumResponse,
    DescribeQuorumResponseListener,
    DescribeQuorumResponseNode,
    DescribeQuorumResponsePartition,
    DescribeQuorumResponseReplicaState,
    DescribeQuorumResponseTopic,
)
from quorum.wire.uuids import ZERO_UUID, uuid_from_str

DIR_0 = "ILZ5MPTeRWakmJu99uBJCA"
DIR_2 = "g42deArWBTRM5A1yuVpMCg"
OBSERVER_DIR = "3Db5QLSqSZieL3rJBUUegA"


def replica(replica_id: int, leo: int, fetch: int = -1, caught_up: int = -1,
            directory: uuid.UUID = ZERO_UUID) -> DescribeQuorumResponseReplicaState:
    return DescribeQuorumResponseReplicaState(
        replica_id=replica_id, replica_directory_id=directory, log_end_offset=leo,
        last_fetch_timestamp=fetch, last_caught_up_timestamp=caught_up,
    )


def response(*, leader_id: int, voters: list[DescribeQuorumResponseReplicaState],
             observers: tuple[DescribeQuorumResponseReplicaState, ...] = (),
             hw: int = 25806, ports: dict[int, int] | None = None) -> DescribeQuorumResponse:
    partition = DescribeQuorumResponsePartition(
        leader_id=leader_id, leader_epoch=2, high_watermark=hw,
        current_voters=tuple(voters), observers=observers,
    )
    nodes = tuple(
        DescribeQuorumResponseNode(
            node_id=node_id,
            listeners=(DescribeQuorumResponseListener(name="CONTROLLER", host="localhost",
                                                      port=port),),
        )
        for node_id, port in (ports or {}).items()
    )
    return DescribeQuorumResponse(
        topics=(DescribeQuorumResponseTopic(topic_name="__cluster_metadata",
                                            partitions=(partition,)),),
        nodes=nodes,
    )


KAFKA_SAMPLE = response(
    leader_id=2,
    voters=[
        replica(0, 25806, 1662500992755, 1662500992755, uuid_from_str(DIR_0)),
        replica(1, 25780, 1662500992500, 1662500992000, uuid_from_str("b-DwmhtOheTqZzPoh52kfA")),
        replica(2, 25806, 1662500992757, 1662500992757, uuid_from_str(DIR_2)),
    ],
    observers=(replica(10, 25806, 1662500992600, 1662500992600, uuid_from_str(OBSERVER_DIR)),),
    ports={0: 9093, 1: 9094, 2: 9095},
)


def test_replication_table_is_kafkas_sample_byte_for_byte() -> None:
    text = render_replication(quorum_info_from_response(KAFKA_SAMPLE))
    assert text.split("\n") == [
        "NodeId\tDirectoryId           \tLogEndOffset\tLag\tLastFetchTimestamp\t"
        "LastCaughtUpTimestamp\tStatus  \t",
        "2     \tg42deArWBTRM5A1yuVpMCg\t25806       \t0  \t1662500992757     \t"
        "1662500992757        \tLeader  \t",
        "0     \tILZ5MPTeRWakmJu99uBJCA\t25806       \t0  \t1662500992755     \t"
        "1662500992755        \tFollower\t",
        "1     \tb-DwmhtOheTqZzPoh52kfA\t25780       \t26 \t1662500992500     \t"
        "1662500992000        \tFollower\t",
        "10    \t3Db5QLSqSZieL3rJBUUegA\t25806       \t0  \t1662500992600     \t"
        "1662500992600        \tObserver\t",
        "",
    ]


def test_replication_prints_the_zero_directory_id_and_unknown_timestamps_as_minus_one() -> None:
    info = quorum_info_from_response(response(leader_id=1, voters=[replica(1, 5), replica(3, 4)]))
    lines = render_replication(info).splitlines()
    assert lines[1].split("\t") == ["1     ", "AAAAAAAAAAAAAAAAAAAAAA", "5           ", "0  ",
                                    "-1                ", "-1                   ", "Leader  ", ""]
    assert lines[2].split("\t")[3] == "1  "


def test_human_readable_replication_prints_milliseconds_ago() -> None:
    info = quorum_info_from_response(
        response(leader_id=1, voters=[replica(1, 7, 1000, 1000), replica(2, 7, 400, -1)])
    )
    lines = render_replication(info, human_readable=True, now_ms=1500).splitlines()
    assert [cell.rstrip() for cell in lines[1].split("\t")[4:6]] == ["500 ms ago", "500 ms ago"]
    assert [cell.rstrip() for cell in lines[2].split("\t")[4:6]] == ["1100 ms ago", "-1"]


@pytest.mark.parametrize("timestamp", [0, -5, 2001])
def test_relative_time_refuses_timestamps_in_the_future_or_at_the_epoch(timestamp: int) -> None:
    with pytest.raises(RelativeTimeError) as caught:
        relative_time_ms(timestamp, "last fetch", 2000)
    assert str(caught.value) == (
        "Error while computing relative time, possible drift in system clock.\n"
        f"Current timestamp is 2000, last fetch timestamp is {timestamp}"
    )


def test_relative_time_of_now_is_zero() -> None:
    assert relative_time_ms(2000, "last fetch", 2000) == 0


def test_status_lines_have_kafkas_keys_and_values_at_column_24() -> None:
    text = render_status("fMCL8kv1SWm87L_Md-I2hg", quorum_info_from_response(KAFKA_SAMPLE))
    lines = text.split("\n")
    assert lines[:6] == [
        "ClusterId:              fMCL8kv1SWm87L_Md-I2hg",
        "LeaderId:               2",
        "LeaderEpoch:            2",
        "HighWatermark:          25806",
        "MaxFollowerLag:         26",
        "MaxFollowerLagTimeMs:   757",
    ]
    assert lines[6] == (
        'CurrentVoters:          [{"id": 0, "directoryId": "ILZ5MPTeRWakmJu99uBJCA", '
        '"endpoints": ["CONTROLLER://localhost:9093"]}, {"id": 1, "directoryId": '
        '"b-DwmhtOheTqZzPoh52kfA", "endpoints": ["CONTROLLER://localhost:9094"]}, '
        '{"id": 2, "directoryId": "g42deArWBTRM5A1yuVpMCg", "endpoints": '
        '["CONTROLLER://localhost:9095"]}]'
    )
    assert lines[7] == 'CurrentObservers:       [{"id": 10, "directoryId": "3Db5QLSqSZieL3rJBUUegA"}]'
    assert lines[8:] == [""]
    assert all(line.index(line.split()[1]) == 24 for line in lines[:8])


def test_status_omits_the_zero_directory_id_and_unknown_endpoints() -> None:
    # as Kafka 4.x's MetadataQuorumCommand.Node.toString (3.x printed "directoryId": null)
    info = quorum_info_from_response(response(leader_id=1, voters=[replica(1, 3), replica(2, 3)],
                                              ports={1: 9093}))
    lines = render_status("c", info).splitlines()
    assert lines[6] == (
        'CurrentVoters:          [{"id": 1, "endpoints": '
        '["CONTROLLER://localhost:9093"]}, {"id": 2}]'
    )
    assert lines[7] == "CurrentObservers:       []"


def test_max_follower_lag_time_is_zero_when_the_leader_is_the_first_most_lagging_voter() -> None:
    info = quorum_info_from_response(
        response(leader_id=1, voters=[replica(1, 9, 50, 50), replica(2, 9, 10, 10)])
    )
    lines = render_status("c", info).splitlines()
    assert lines[4:6] == ["MaxFollowerLag:         0", "MaxFollowerLagTimeMs:   0"]


def test_max_follower_lag_time_is_minus_one_when_a_timestamp_is_unknown() -> None:
    info = quorum_info_from_response(
        response(leader_id=1, voters=[replica(1, 9, 50, 50), replica(2, 4, 10, -1)])
    )
    lines = render_status("c", info).splitlines()
    assert lines[4:6] == ["MaxFollowerLag:         5", "MaxFollowerLagTimeMs:   -1"]


def test_ipv6_endpoints_are_bracketed() -> None:
    partition = KAFKA_SAMPLE.topics[0].partitions[0]
    node = DescribeQuorumResponseNode(
        node_id=2, listeners=(DescribeQuorumResponseListener(name="C", host="::1", port=9),)
    )
    sample = DescribeQuorumResponse(topics=(DescribeQuorumResponseTopic(
        topic_name="__cluster_metadata", partitions=(partition,)),), nodes=(node,))
    assert '"endpoints": ["C://[::1]:9"]' in render_status("c", quorum_info_from_response(sample))


def test_pretty_print_table_pads_each_column_to_its_widest_cell_and_ends_rows_with_a_tab() -> None:
    text = pretty_print_table(["A", "Bee"], [["long cell", "x"], ["y", "z"]])
    assert text == "A        \tBee\t\nlong cell\tx  \t\ny        \tz  \t\n"
