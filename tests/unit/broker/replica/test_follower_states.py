"""``FollowerStates``: a leader's followers as a compact mapping whose entries may be
replaced but never added or removed."""

from __future__ import annotations

import pytest

from broker.replica.replica_state import NO_FOLLOWERS, FollowerStates, ReplicaState


def test_it_reads_like_the_dict_it_replaces() -> None:
    one, two = ReplicaState(log_end_offset=1), ReplicaState(log_end_offset=2)
    states = FollowerStates((2, 3), [one, two])
    assert dict(states) == {2: one, 3: two}
    assert states[3] is two and states.get(2) is one and states.get(4) is None
    assert 3 in states and 1 not in states and len(states) == 2
    assert list(states.items()) == [(2, one), (3, two)]
    with pytest.raises(KeyError):
        states[4]


def test_a_state_is_replaced_in_place_but_no_follower_is_added() -> None:
    states = FollowerStates((2, 3), [ReplicaState(), ReplicaState()])
    newer = ReplicaState(log_end_offset=7)
    states[3] = newer
    assert states[3] is newer
    with pytest.raises(KeyError):
        states[4] = newer
    with pytest.raises(KeyError):
        NO_FOLLOWERS[2] = newer
    assert len(NO_FOLLOWERS) == 0
