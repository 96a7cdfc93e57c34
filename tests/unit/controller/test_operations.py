"""Controller operations: bounded slices, transactions around multi-slice results, the
abort a new active controller writes first."""

from __future__ import annotations

import uuid

import attrs
import pytest

from quorum.controller.operations import (
    RECORDS_PER_SLICE,
    Operation,
    Slice,
    Steps,
    emit_in_slices,
    run_to_end,
    scan_in_slices,
)
from quorum.controller.slicing import MAX_UNITS_PER_SLICE
from quorum.wire.messages.create_partitions import (
    CreatePartitionsRequest,
    CreatePartitionsRequestTopic,
)
from quorum.wire.messages.elect_leaders import ElectLeadersRequest
from quorum.wire.messages.metadata_records import (
    AbortTransactionRecord,
    BeginTransactionRecord,
    EndTransactionRecord,
    NoOpRecord,
    TopicRecord,
)
from quorum.wire.messages.topics import CreateTopicsRequest, CreateTopicsRequestTopic
from quorum.wire.metadata_serde import MetadataRecord
from tests.unit.controller.cluster_world import CONFIG
from tests.unit.controller.test_controller import Quorum


def _noops(count: int) -> list[MetadataRecord]:
    return [NoOpRecord() for _ in range(count)]


def _steps(*slices: Slice, response: str = "done") -> Steps[str]:
    yield from slices
    return response


def _step_all(operation: Operation[str]) -> list[list[MetadataRecord]]:
    proposals = []
    while not operation.done:
        proposals.append(operation.step())
    return proposals


def test_records_of_one_slice_go_out_as_one_proposal_without_markers() -> None:
    operation = Operation("op", _steps(Slice(_noops(3))))
    proposals = _step_all(operation)
    assert [len(p) for p in proposals] == [3, 0]
    assert operation.response == "done" and not operation.in_transaction


def test_records_over_several_slices_are_framed_as_one_transaction() -> None:
    operation = Operation(
        "CreateTopics", _steps(*emit_in_slices(_noops(2 * RECORDS_PER_SLICE + 1)))
    )
    proposals = _step_all(operation)
    assert isinstance(proposals[0][0], BeginTransactionRecord)
    assert proposals[0][0].name == "CreateTopics"
    assert isinstance(proposals[2][-1], EndTransactionRecord)
    assert [len(p) for p in proposals] == [RECORDS_PER_SLICE + 1, RECORDS_PER_SLICE, 2, 0]
    assert max(len(p) for p in proposals) <= MAX_UNITS_PER_SLICE  # one Raft batch each
    assert not operation.in_transaction


def test_one_slice_larger_than_a_batch_is_framed_as_a_transaction_too() -> None:
    proposals = _step_all(Operation("op", _steps(Slice(_noops(RECORDS_PER_SLICE + 5)))))
    assert isinstance(proposals[0][0], BeginTransactionRecord)
    assert isinstance(proposals[0][-1], EndTransactionRecord)


def test_a_scan_yields_empty_slices_of_bounded_work_then_what_it_found() -> None:
    def steps() -> Steps[None]:
        found = yield from scan_in_slices(
            range(2500), lambda i: NoOpRecord() if i % 1000 == 7 else None
        )
        yield from emit_in_slices(found)
        return None

    operation = Operation("scan", steps())
    units = []
    proposals = []
    while not operation.done:
        proposals.append(operation.step())
        units.append(operation.last_units)
    assert max(units) <= MAX_UNITS_PER_SLICE
    assert [len(p) for p in proposals if p] == [3]  # one slice of records: no markers


def test_an_operation_that_promised_more_and_found_none_still_closes_its_transaction() -> None:
    operation = Operation("op", _steps(Slice(_noops(2), more=True)))
    records = run_to_end(operation).records
    assert isinstance(records[0], BeginTransactionRecord)
    assert isinstance(records[-1], EndTransactionRecord)


def test_a_create_topics_larger_than_a_slice_is_one_transaction_of_bounded_slices() -> None:
    quorum = Quorum()
    quorum.lead()
    quorum.start(1, 2, 3)
    quorum.commit()
    request = CreateTopicsRequest(topics=(
        CreateTopicsRequestTopic(name="big", num_partitions=2500, replication_factor=3),
        CreateTopicsRequestTopic(name="small", num_partitions=2, replication_factor=2),
    ))
    operation = quorum.active.start(request, 5, now_ms=quorum.now_ms, next_offset=len(quorum.log))
    sizes = []
    while not operation.done:
        records = operation.step()
        sizes.append(len(records))
        quorum.log.extend(records)
        quorum.active.appended(records, len(quorum.log))
    assert max(sizes) <= MAX_UNITS_PER_SLICE + 1  # a marker beside a full slice
    written = [r for r in quorum.log if r is not None]
    begins = [r for r in written if isinstance(r, BeginTransactionRecord)]
    ends = [r for r in written if isinstance(r, EndTransactionRecord)]
    assert len(begins) == len(ends) == 1
    topics = [r.name for r in written if isinstance(r, TopicRecord)]
    assert topics == ["big", "small"]
    quorum.commit()
    image = quorum.standby.committed
    assert len(image.topic("big").partitions) == 2500  # type: ignore[union-attr]
    assert len(image.topic("small").partitions) == 2  # type: ignore[union-attr]
    assert [t.error_code for t in operation.response.topics] == [0, 0]  # type: ignore[union-attr]


def test_a_new_active_controller_aborts_a_transaction_left_open_first() -> None:
    quorum = Quorum()
    quorum.lead()
    quorum.active.deactivate()
    result = quorum.active.activate(
        quorum.now_ms, next_offset=len(quorum.log), epoch=9, open_transaction=1
    )
    assert isinstance(result.records[0], AbortTransactionRecord)
    assert "offset 1" in (result.records[0].reason or "")


@pytest.mark.parametrize("partitions", [1, RECORDS_PER_SLICE - 2])
def test_a_create_topics_within_one_slice_writes_no_markers(partitions: int) -> None:
    quorum = Quorum()
    quorum.lead()
    quorum.start(1, 2)
    request = CreateTopicsRequest(topics=(
        CreateTopicsRequestTopic(name="t", num_partitions=partitions, replication_factor=2),
    ))
    records = quorum.send(request, 5).records
    assert not any(
        isinstance(r, BeginTransactionRecord | EndTransactionRecord) for r in records
    )
    assert uuid.UUID(int=0) not in {getattr(r, "topic_id", None) for r in records}


def _run_in_slices(quorum: Quorum, request: object, version: int) -> tuple[list[int], object]:
    """Step an operation as the node does; the records' count per proposal and the response."""
    operation = quorum.active.start(
        request, version, now_ms=quorum.now_ms, next_offset=len(quorum.log)
    )
    sizes, units = [], []
    while not operation.done:
        records = operation.step()
        sizes.append(len(records))
        units.append(operation.last_units)
        quorum.log.extend(records)
        quorum.active.appended(records, len(quorum.log))
    assert max(units) <= MAX_UNITS_PER_SLICE
    quorum.commit()
    return sizes, operation.response


def test_create_partitions_adds_thousands_of_partitions_in_bounded_slices() -> None:
    quorum = Quorum()
    quorum.lead()
    quorum.start(1, 2, 3)
    quorum.send(CreateTopicsRequest(topics=(
        CreateTopicsRequestTopic(name="t", num_partitions=3, replication_factor=3),
    )), 5)
    quorum.commit()
    request = CreatePartitionsRequest(topics=(
        CreatePartitionsRequestTopic(name="t", count=3003, assignments=None),
    ))
    sizes, response = _run_in_slices(quorum, request, 3)
    assert [r.error_code for r in response.results] == [0]  # type: ignore[attr-defined]
    assert len(sizes) >= 4 and max(sizes) <= MAX_UNITS_PER_SLICE
    topic = quorum.standby.committed.topic("t")
    assert topic is not None and sorted(topic.partitions) == list(range(3003))
    # the new partitions continue partition 0's leader round-robin over the three brokers
    leaders = [topic.partitions[i].leader for i in range(3, 3003)]
    assert {leaders.count(b) for b in (1, 2, 3)} == {1000}


def test_elect_leaders_over_every_partition_scans_in_bounded_slices() -> None:
    quorum = Quorum()
    quorum.lead()
    quorum.start(1, 2, 3)
    quorum.send(CreateTopicsRequest(topics=(
        CreateTopicsRequestTopic(name="t", num_partitions=2500, replication_factor=3),
    )), 5)
    quorum.commit()
    sizes, response = _run_in_slices(
        quorum, ElectLeadersRequest(election_type=0, topic_partitions=None), 2
    )
    assert len(sizes) >= 3  # 2,500 partitions examined, a slice per thousand
    # every preferred replica leads already: nothing to elect, nothing to report
    assert all(not r.partition_result  # type: ignore[attr-defined]
               for r in response.replica_election_results)  # type: ignore[attr-defined]


def test_the_preferred_leader_rebalance_examines_only_the_imbalanced_partitions() -> None:
    quorum = Quorum(attrs.evolve(CONFIG, leader_imbalance_check_interval_ms=1_000))
    quorum.lead()
    quorum.start(1, 2, 3)
    quorum.send(CreateTopicsRequest(topics=(
        CreateTopicsRequestTopic(name="t", num_partitions=2500, replication_factor=3),
    )), 5)
    quorum.commit()
    index = quorum.active.partitions
    assert not index.imbalanced and not index.leaderless
    # broker 1 is fenced: it loses every leadership (and its ISR places), a third of them moved
    quorum.now_ms += 60_000
    for broker_id in (2, 3):
        quorum.heartbeat(broker_id)
    quorum.tick()
    quorum.commit()
    moved = set(index.imbalanced)
    assert 700 < len(moved) < 1000
    # back and in the ISRs again: the rebalance examines those partitions and no others
    quorum.register(1)
    quorum.heartbeat(1)
    quorum.commit()
    quorum.now_ms += 1_000
    for broker_id in (1, 2, 3):
        quorum.heartbeat(broker_id)
    operation = quorum.active.due_operation(quorum.now_ms, next_offset=len(quorum.log))
    assert operation is not None and operation.name == "PreferredLeaderRebalance"
    examined = 0
    while not operation.done:
        operation.step()
        examined += operation.last_units
    assert examined <= len(index.imbalanced)
