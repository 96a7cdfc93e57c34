"""The quorum-state file: Kafka's JSON line, written atomically, refused when corrupt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quorum.node import QuorumStateError, QuorumStateFile
from quorum.raft import ElectionState


def test_a_missing_file_means_a_first_start(tmp_path: Path) -> None:
    assert QuorumStateFile(tmp_path).read() is None


@pytest.mark.parametrize(
    "state",
    [ElectionState(0), ElectionState(3, leader_id=2, voted_id=2), ElectionState(7, voted_id=1)],
)
def test_a_written_state_reads_back_and_leaves_no_temp_file(
    tmp_path: Path, state: ElectionState
) -> None:
    store = QuorumStateFile(tmp_path)
    store.write(ElectionState(1, leader_id=9))
    store.write(state)
    assert QuorumStateFile(tmp_path).read() == state
    assert sorted(p.name for p in tmp_path.iterdir()) == ["quorum-state"]


def test_the_file_holds_kafkas_data_version_1_json_line(tmp_path: Path) -> None:
    store = QuorumStateFile(tmp_path)
    store.write(ElectionState(2, leader_id=None, voted_id=1))
    text = store.path.read_text()
    assert text.endswith("\n") and text.count("\n") == 1
    assert json.loads(text) == {
        "leaderId": -1,
        "leaderEpoch": 2,
        "votedId": 1,
        "votedDirectoryId": "AAAAAAAAAAAAAAAAAAAAAA",
        "data_version": 1,
    }


def test_a_kafka_data_version_0_file_is_read(tmp_path: Path) -> None:
    (tmp_path / "quorum-state").write_text(
        '{"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,'
        '"currentVoters":[{"voterId":1},{"voterId":2}],"data_version":0}'
    )
    assert QuorumStateFile(tmp_path).read() == ElectionState(2, leader_id=1)


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "JSON object"),
        ('{"leaderId":1,"leaderEpoch":"2","votedId":-1}', "leaderEpoch is '2'"),
        ('{"leaderId":1,"votedId":-1}', "leaderEpoch is None"),
        ('{"leaderId":1,"leaderEpoch":-3,"votedId":-1}', "negative epoch"),
        ('{"leaderId":1,"leaderEpoch":2,"votedId":-1,"data_version":7}', "data_version 7"),
    ],
)
def test_a_corrupt_file_is_a_startup_error_that_names_it(
    tmp_path: Path, content: str, why: str
) -> None:
    path = tmp_path / "quorum-state"
    path.write_text(content)
    with pytest.raises(QuorumStateError) as failure:
        QuorumStateFile(tmp_path).read()
    assert str(path) in str(failure.value)
    assert why in str(failure.value)
