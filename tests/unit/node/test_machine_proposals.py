"""Records a state machine computed are proposed, unless the leadership ends first.

Found by the fault tests: the core runs its timers before it takes a proposal,
so a leader whose check-quorum deadline passed between the machine's
computation and the proposal resigned inside ``propose``; the node crashed on
the NotLeaderError."""

from __future__ import annotations

from quorum.node.driver import propose_machine_records
from quorum.raft import OffsetRange
from tests.unit.raft.builders import make_leader, new_core
from tests.unit.raft.harness import TEST_CONFIG

NOW = 10_000


class RecordingMachine:
    """The part of a state machine hook this path uses: ``proposed``."""

    def __init__(self) -> None:
        self.proposed_ranges: list[OffsetRange] = []

    def proposed(self, offsets: OffsetRange) -> None:
        self.proposed_ranges.append(offsets)


def test_records_are_proposed_and_the_machine_told_where_they_landed() -> None:
    core = new_core(1)
    make_leader(core, NOW)
    start = core.next_append_offset
    machine = RecordingMachine()
    ready = propose_machine_records(core, machine, [b"a", b"b"], NOW)  # type: ignore[arg-type]
    assert ready.accepted == OffsetRange(start, start + 2)
    assert machine.proposed_ranges == [ready.accepted]


def test_a_leadership_that_ends_at_the_proposal_appends_nothing_and_the_node_goes_on() -> None:
    core = new_core(1)
    make_leader(core, NOW)
    assert core.next_append_offset is not None  # the machine computed for this offset
    end_before = core.log.log_end_offset
    machine = RecordingMachine()
    # no follower fetched for the whole check-quorum timeout: the core resigns on its timers
    late = NOW + TEST_CONFIG.check_quorum_timeout_ms + 1
    ready = propose_machine_records(core, machine, [b"a"], late)  # type: ignore[arg-type]
    assert ready.accepted is None and machine.proposed_ranges == []
    assert not core.is_leader and ready.role != "Leader"
    assert core.log.log_end_offset == end_before
