"""The sans-I/O Raft core of the metadata quorum (KIP-595, KIP-996 pre-vote, check quorum).

``RaftCore`` is the whole public surface a driver needs: construct it from the
node id, the voter ids, a ``ReplicatedLog``, the persisted ``ElectionState``
(None on first start), a ``RaftConfig``, a seeded ``random.Random`` and the
time; feed it inputs and act on each ``Ready`` (``quorum.raft.output``).
"""

from quorum.raft.config import RaftConfig
from quorum.raft.core import RaftCore
from quorum.raft.errors import (
    IllegalTransitionError,
    InvalidSnapshotIdError,
    NotLeaderError,
    RaftError,
)
from quorum.raft.output import (
    InboundRequest,
    InboundResponse,
    LeaderAndEpoch,
    OffsetRange,
    Outbound,
    OutboundRequest,
    OutboundResponse,
    Ready,
)
from quorum.raft.states import (
    Candidate,
    ElectionState,
    Follower,
    Leader,
    Prospective,
    Resigned,
    State,
    Unattached,
)

__all__ = [
    "Candidate",
    "ElectionState",
    "Follower",
    "IllegalTransitionError",
    "InboundRequest",
    "InboundResponse",
    "InvalidSnapshotIdError",
    "Leader",
    "LeaderAndEpoch",
    "NotLeaderError",
    "OffsetRange",
    "Outbound",
    "OutboundRequest",
    "OutboundResponse",
    "Prospective",
    "RaftConfig",
    "RaftCore",
    "RaftError",
    "Ready",
    "Resigned",
    "State",
    "Unattached",
]
