"""An epoch no quorum could stand at again is refused, not taken.

Found by fuzzing the Raft RPCs: one Vote, BeginQuorumEpoch or EndQuorumEpoch at epoch
2^31-1 moved every voter there, and the next election could not encode 2^31: the nodes
exited, and again after each restart (the epoch was saved). Requests above
``MAX_REQUEST_EPOCH`` are answered INVALID_REQUEST and change nothing.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from quorum.raft.adapters import MAX_REQUEST_EPOCH
from quorum.raft.output import InboundRequest
from quorum.raft.rpc import ErrorCode

from .builders import (
    begin_epoch_request,
    end_epoch_request,
    make_leader,
    new_core,
    response_to,
    vote_request,
)

BUILDERS: dict[str, Callable[[int], InboundRequest]] = {
    "vote": lambda epoch: vote_request(2, epoch, last_epoch=1, last_offset=10**9),
    "pre-vote": lambda epoch: vote_request(2, epoch, last_epoch=1, last_offset=10**9,
                                           pre_vote=True),
    "begin-quorum-epoch": lambda epoch: begin_epoch_request(2, epoch),
    "end-quorum-epoch": lambda epoch: end_epoch_request(2, epoch),
}


@pytest.mark.parametrize("kind", sorted(BUILDERS))
@pytest.mark.parametrize("epoch", [MAX_REQUEST_EPOCH + 1, 2**31 - 1])
def test_an_epoch_above_the_ceiling_is_refused_and_changes_nothing(kind: str, epoch: int) -> None:
    core = new_core(1)
    make_leader(core)
    before = (core.epoch, core.role, core.leader_id)
    request = BUILDERS[kind](epoch)
    answer = response_to(core.handle(request, 10_001), request)
    assert answer.error == ErrorCode.INVALID_REQUEST
    assert (core.epoch, core.role, core.leader_id) == before
    assert core.poll(20_000) is not None  # and the node goes on


@pytest.mark.parametrize("kind", ["vote", "begin-quorum-epoch"])
def test_an_epoch_at_the_ceiling_is_still_taken(kind: str) -> None:
    core = new_core(1)
    make_leader(core)
    request = BUILDERS[kind](MAX_REQUEST_EPOCH)
    answer = response_to(core.handle(request, 10_001), request)
    assert answer.error == ErrorCode.NONE
    assert core.epoch == MAX_REQUEST_EPOCH
