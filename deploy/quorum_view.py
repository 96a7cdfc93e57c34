"""What a launcher can ask a running quorum: who leads, its description, commits.

``QuorumView`` is the part of ``LocalCluster`` that talks the protocol
(DescribeQuorum at every running node, PykraftAppend through the leader);
it needs only the node addresses, whether a node runs, and a poll loop.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Collection, Sequence
from typing import Final, TypeVar

from deploy.probes import append_at, describe_quorum_at
from quorum.client import ClientError
from quorum.describe import DescribeQuorumError, QuorumInfo, quorum_info_from_response
from quorum.wire.error_codes import Errors
from quorum.wire.messages import DescribeQuorumResponse
from quorum.wire.messages.pykraft_append import PykraftAppendResponse

__all__ = ["AppendFailed", "QuorumView"]

_LEADER_TIMEOUT_S: Final = 20.0
_APPEND_TIMEOUT_S: Final = 20.0

T = TypeVar("T")


class AppendFailed(Exception):
    """An append was refused with an error that retrying elsewhere cannot fix."""

    def __init__(self, response: PykraftAppendResponse) -> None:
        super().__init__(f"append refused: {Errors.from_code(response.error_code).name}: "
                         f"{response.error_message}")
        self.response = response


class QuorumView(abc.ABC):
    @property
    @abc.abstractmethod
    def node_ids(self) -> list[int]: ...

    @abc.abstractmethod
    def address(self, node_id: int) -> tuple[str, int]: ...

    @abc.abstractmethod
    def is_running(self, node_id: int) -> bool: ...

    @abc.abstractmethod
    def wait_for(self, condition: Callable[[], T | None], what: str, timeout: float,
                 *, nodes: Sequence[int] | None = None) -> T: ...

    @property
    def bootstrap_controllers(self) -> str:
        """``host:port,...`` of every controller, for ``--bootstrap-controller``."""
        return ",".join(f"{h}:{p}" for h, p in (self.address(n) for n in self.node_ids))

    def quorum_answer(self, node_id: int, timeout: float = 2.0) -> DescribeQuorumResponse | None:
        """Node ``node_id``'s DescribeQuorum answer, or None if it cannot be reached."""
        if not self.is_running(node_id):
            return None
        try:
            return describe_quorum_at(self.address(node_id), timeout=timeout)
        except ClientError:
            return None

    def find_leader(self, among: Collection[int] | None = None) -> tuple[int, QuorumInfo] | None:
        """One pass: the running node that answers DescribeQuorum as leader of the newest
        epoch any answering node knows, if any.

        A deposed leader cut off from the others still answers as leader of its old
        epoch until check quorum makes it resign; it is not the leader while another
        node knows a newer epoch.
        """
        claims: list[tuple[int, QuorumInfo]] = []
        newest = -1
        for node_id in among if among is not None else self.node_ids:
            response = self.quorum_answer(node_id)
            if response is None:
                continue
            newest = max(newest, _epoch_known_in(response))
            try:
                info = quorum_info_from_response(response)
            except DescribeQuorumError:
                continue
            if info.leader_id == node_id:
                claims.append((node_id, info))
        best = max(claims, key=lambda claim: claim[1].leader_epoch, default=None)
        return best if best is not None and best[1].leader_epoch >= newest else None

    def leader(self, timeout: float = _LEADER_TIMEOUT_S, *, exclude: Collection[int] = (),
               min_epoch: int = 0) -> int:
        """Wait for a leader (not in ``exclude``, in an epoch >= ``min_epoch``)."""
        return self.describe(timeout, exclude=exclude, min_epoch=min_epoch).leader_id

    def describe(self, timeout: float = _LEADER_TIMEOUT_S, *, exclude: Collection[int] = (),
                 min_epoch: int = 0) -> QuorumInfo:
        """The leader's DescribeQuorum, once there is a leader as asked."""
        among = [n for n in self.node_ids if n not in exclude]

        def found() -> QuorumInfo | None:
            answer = self.find_leader(among)
            if answer is None or answer[1].leader_epoch < min_epoch:
                return None
            return answer[1]

        return self.wait_for(found, f"a leader among {among} in epoch >= {min_epoch}", timeout)

    def wait_caught_up(self, nodes: Collection[int] | None = None,
                       timeout: float = _LEADER_TIMEOUT_S) -> QuorumInfo:
        """Until the high watermark is the leader's log end offset and every voter in
        ``nodes`` (default: all) has that log end offset."""
        wanted = set(self.node_ids if nodes is None else nodes)

        def caught_up() -> QuorumInfo | None:
            answer = self.find_leader()
            if answer is None:
                return None
            info = answer[1]
            end = info.leader.log_end_offset
            ends = {v.replica_id: v.log_end_offset for v in info.voters}
            done = info.high_watermark == end and all(ends.get(n) == end for n in wanted)
            return info if done else None

        return self.wait_for(caught_up, f"voters {sorted(wanted)} to catch up", timeout)

    def append(self, payloads: Sequence[bytes], timeout: float = _APPEND_TIMEOUT_S,
               *, request_timeout: float = 5.0,
               among: Collection[int] | None = None) -> PykraftAppendResponse:
        """Commit ``payloads`` through whichever node (of ``among``) leads; returns the
        committed offsets.

        Retries while leadership moves (NOT_LEADER_OR_FOLLOWER, lost connections,
        timeouts), so a retried append may be committed twice; raises AppendFailed
        for any other refusal.
        """
        def attempt() -> PykraftAppendResponse | None:
            answer = self.find_leader(among)
            if answer is None:
                return None
            try:
                response = append_at(self.address(answer[0]), payloads, timeout=request_timeout)
            except ClientError:
                return None
            error = Errors.from_code(response.error_code)
            if error is Errors.NONE:
                return response
            if error.retriable:
                return None
            raise AppendFailed(response)

        return self.wait_for(attempt, f"{len(payloads)} records to be committed", timeout)


def _epoch_known_in(response: DescribeQuorumResponse) -> int:
    """The epoch an answer names, errors included (a follower names its leader's)."""
    return max((p.leader_epoch for t in response.topics for p in t.partitions), default=-1)
