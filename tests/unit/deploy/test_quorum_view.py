"""QuorumView.find_leader: the leader of the newest epoch, not the first node that claims it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from deploy.quorum_view import QuorumView
from quorum.raft.adapters import describe_quorum_response
from quorum.raft.rpc import DescribeQuorumAnswer, ErrorCode
from quorum.wire.messages import DescribeQuorumResponse

T = TypeVar("T")


class CannedView(QuorumView):
    """Each node answers DescribeQuorum with a fixed (leader, epoch); None: unreachable."""

    def __init__(self, answers: dict[int, tuple[int, int] | None]) -> None:
        self._answers = answers

    @property
    def node_ids(self) -> list[int]:
        return sorted(self._answers)

    def address(self, node_id: int) -> tuple[str, int]:
        return ("127.0.0.1", 9000 + node_id)

    def is_running(self, node_id: int) -> bool:
        return self._answers[node_id] is not None

    def wait_for(self, condition: Callable[[], T | None], what: str, timeout: float,
                 *, nodes: Sequence[int] | None = None) -> T:
        found = condition()
        assert found is not None, what
        return found

    def quorum_answer(self, node_id: int, timeout: float = 2.0) -> DescribeQuorumResponse | None:
        known = self._answers[node_id]
        if known is None:
            return None
        leader, epoch = known
        error = ErrorCode.NONE if leader == node_id else ErrorCode.NOT_LEADER_OR_FOLLOWER
        answer = DescribeQuorumAnswer(partition_error=error, leader_id=leader, leader_epoch=epoch,
                                      high_watermark=10 if error == ErrorCode.NONE else -1)
        return describe_quorum_response(answer)


def _leader(view: QuorumView) -> tuple[int, int] | None:
    found = view.find_leader()
    return None if found is None else (found[0], found[1].leader_epoch)


def test_a_deposed_leader_that_answers_first_is_not_taken_for_the_leader() -> None:
    # node 1 was cut off as leader of epoch 2 and has not heard of epoch 3 yet
    view = CannedView({1: (1, 2), 2: (2, 3), 3: (2, 3)})
    assert _leader(view) == (2, 3)


def test_no_leader_while_a_newer_epoch_is_known_but_its_leader_does_not_answer() -> None:
    assert _leader(CannedView({1: (1, 2), 2: None, 3: (2, 3)})) is None


def test_the_one_leader_is_found_wherever_it_is_in_the_order() -> None:
    assert _leader(CannedView({1: (3, 4), 2: (3, 4), 3: (3, 4)})) == (3, 4)
    assert _leader(CannedView({1: (1, 4), 2: None, 3: (1, 4)})) == (1, 4)


def test_among_limits_the_nodes_asked() -> None:
    view = CannedView({1: (1, 2), 2: (2, 3), 3: (2, 3)})
    found = view.find_leader(among=[1])
    assert found is not None and found[0] == 1
    assert view.find_leader(among=[3]) is None
