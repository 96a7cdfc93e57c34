"""Broker lifecycle commands: registration, heartbeats, unregistration, session expiry.

Facts from Kafka's ClusterControlManager / BrokerHeartbeatManager (kraft-facts
5.3, 5.4). A broker's state comes from the image: FENCED (``fenced``),
CONTROLLED_SHUTDOWN (unfenced, ``in_controlled_shutdown``) or UNFENCED. A
heartbeat moves it (this docstring is the transition table):

=====================  ==========================================  ====================
from                   heartbeat                                   to
=====================  ==========================================  ====================
FENCED                 WantShutDown                                SHUTDOWN_NOW
FENCED                 not WantFence, caught up [1]                UNFENCED
FENCED                 otherwise                                   FENCED
UNFENCED               WantFence and WantShutDown                  SHUTDOWN_NOW
UNFENCED               WantFence                                   FENCED
UNFENCED               WantShutDown, leads a partition             CONTROLLED_SHUTDOWN
UNFENCED               WantShutDown, leads nothing                 SHUTDOWN_NOW
UNFENCED               otherwise                                   UNFENCED
CONTROLLED_SHUTDOWN    leads nothing, active brokers caught up [2] SHUTDOWN_NOW
CONTROLLED_SHUTDOWN    otherwise                                   CONTROLLED_SHUTDOWN
=====================  ==========================================  ====================

[1] ``CurrentMetadataOffset >= broker epoch`` (the offset of its
RegisterBrokerRecord, so the broker has applied its own registration). A
fenced broker still marked in controlled shutdown (it was told to shut down)
is never unfenced: only a new registration clears the mark.
[2] Every active broker (unfenced, not shutting down) has reported a metadata
offset at or past the last record that moved this broker's leaderships away
(Kafka's lowest-active-offset rule), so no active broker still routes to it.
A controller that took over in the middle of a shutdown does not know that
offset and uses the end of its working image instead (later, never earlier).

Records: entering FENCED / SHUTDOWN_NOW from an unfenced state writes the
partition changes that take the broker out of ISRs and leadership, then
``BrokerRegistrationChangeRecord(fenced=1)`` (Kafka's order); an already
fenced broker writes nothing. UNFENCED writes ``fenced=-1`` and then elects
it where partitions are leaderless. CONTROLLED_SHUTDOWN writes
``in_controlled_shutdown=1`` and the partition changes.

Log directories are neither checked at registration nor written, and a
heartbeat's OfflineLogDirs is ignored: pykraft brokers have one log directory
and do no directory assignment (KIP-858).

Session state (``BrokerSessions``) is soft state outside the log: these
commands update it as Kafka's heartbeat manager is updated while a command
runs; a rejected request leaves it untouched.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Generator

from quorum.controller.broker_registration import (
    METADATA_VERSION_FEATURE,
    register_broker_record,
    registration_problem,
)
from quorum.controller.broker_sessions import BrokerSessions
from quorum.controller.delta import fold_records
from quorum.controller.image import BrokerRegistration, MetadataImage
from quorum.controller.operations import (
    RECORDS_PER_SLICE,
    Slice,
    SliceBudget,
    Steps,
    at_once,
    emit_in_slices,
    scan_in_slices,
)
from quorum.controller.partition_change import (
    broker_removal_examiner,
    broker_unfence_examiner,
)
from quorum.controller.results import ControllerContext
from quorum.wire.error_codes import Errors
from quorum.wire.messages.broker_lifecycle import (
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
)
from quorum.wire.messages.metadata_records import (
    BrokerRegistrationChangeRecord,
    PartitionChangeRecord,
    UnregisterBrokerRecord,
)
from quorum.wire.messages.unregister_broker import (
    UnregisterBrokerRequest,
    UnregisterBrokerResponse,
)
from quorum.wire.metadata_serde import MetadataRecord

__all__ = [
    "METADATA_VERSION_FEATURE",
    "BrokerControlState",
    "broker_heartbeat",
    "broker_heartbeat_steps",
    "fence_stale_brokers",
    "fence_stale_brokers_steps",
    "next_fence_deadline_ms",
    "register_broker",
    "register_broker_steps",
    "steady_heartbeat",
    "unregister_broker",
    "unregister_broker_steps",
]

logger = logging.getLogger(__name__)


class BrokerControlState(enum.Enum):
    FENCED = "fenced"
    UNFENCED = "unfenced"
    CONTROLLED_SHUTDOWN = "controlled shutdown"
    SHUTDOWN_NOW = "shutdown now"

    @property
    def fenced(self) -> bool:
        return self in (BrokerControlState.FENCED, BrokerControlState.SHUTDOWN_NOW)


# -- registration ----------------------------------------------------------------------------


def register_broker_steps(
    image: MetadataImage,
    request: BrokerRegistrationRequest,
    version: int,
    ctx: ControllerContext,
    sessions: BrokerSessions,
) -> Steps[BrokerRegistrationResponse]:
    """A new incarnation gets the offset of its RegisterBrokerRecord as epoch, and starts fenced.

    The same incarnation registering again keeps its epoch and state and
    writes nothing (Kafka rewrites an identical record). A new incarnation
    of a broker that still sits in ISRs (it restarted without a controlled
    shutdown, maybe losing its unflushed tail) is also taken out of them,
    after its RegisterBrokerRecord; Kafka 3.9 does that only with ELR on.
    """
    problem = registration_problem(image, request, ctx, sessions)
    if problem is not None:
        error, text = problem
        logger.warning("broker %d cannot register: %s", request.broker_id, text)
        return BrokerRegistrationResponse(error_code=error)
    broker_id = request.broker_id
    existing = image.broker(broker_id)
    if existing is not None and existing.incarnation_id == request.incarnation_id:
        sessions.touch(broker_id, ctx.now_ms, sessions.metadata_offset(broker_id))
        return BrokerRegistrationResponse(broker_epoch=existing.epoch)
    sessions.remove(broker_id)
    sessions.touch(broker_id, ctx.now_ms)
    removals = yield from _scan_removals(image, broker_id, ctx)
    # the epoch is the record's offset: after a BeginTransactionRecord when one comes first
    framed = 1 + len(removals) > RECORDS_PER_SLICE
    epoch = ctx.append_offset() + (1 if framed else 0)
    yield from emit_in_slices([register_broker_record(request, epoch), *removals])
    logger.info("broker %d registers incarnation %s with epoch %d",
                broker_id, request.incarnation_id, epoch)
    return BrokerRegistrationResponse(broker_epoch=epoch)


register_broker = at_once("BrokerRegistration", register_broker_steps)


# -- heartbeats ------------------------------------------------------------------------------


def _scan_removals(
    image: MetadataImage, broker_id: int, ctx: ControllerContext
) -> Generator[Slice, None, list[PartitionChangeRecord]]:
    examine = broker_removal_examiner(
        image, broker_id, unclean_default=ctx.config.unclean_leader_election_enable
    )
    return (yield from scan_in_slices(image.iter_partitions(), examine))


def _leads_any(image: MetadataImage, broker_id: int) -> Generator[Slice, None, bool]:
    """Whether ``broker_id`` leads a partition (a scan that stops at the first)."""
    budget = SliceBudget()
    for _topic, _index, partition in image.iter_partitions():
        yield from budget.take()
        if partition.leader == broker_id:
            return True
    if budget.units:
        yield budget.pause()
    return False


def _transition_steps(
    image: MetadataImage,
    broker: BrokerRegistration,
    state: BrokerControlState,
    ctx: ControllerContext,
) -> Generator[Slice, None, int]:
    """The records of a move to ``state`` (see the module docstring); returns how many."""
    if state is _current_state(broker) or (state.fenced and broker.fenced):
        return 0
    broker_id, epoch = broker.broker_id, broker.epoch
    records: list[MetadataRecord]
    if state.fenced:
        removals = yield from _scan_removals(image, broker_id, ctx)
        fence = BrokerRegistrationChangeRecord(broker_id=broker_id, broker_epoch=epoch, fenced=1)
        records = [*removals, fence]
    elif state is BrokerControlState.UNFENCED:
        change = BrokerRegistrationChangeRecord(broker_id=broker_id, broker_epoch=epoch, fenced=-1)
        unfenced = fold_records(image, [change], image.provenance)
        examine = broker_unfence_examiner(
            unfenced, broker_id, unclean_default=ctx.config.unclean_leader_election_enable
        )
        elected = yield from scan_in_slices(unfenced.iter_partitions(), examine)
        records = [change, *elected]
    else:
        removals = yield from _scan_removals(image, broker_id, ctx)
        shutdown = BrokerRegistrationChangeRecord(
            broker_id=broker_id, broker_epoch=epoch, in_controlled_shutdown=1
        )
        records = [shutdown, *removals]
    yield from emit_in_slices(records)
    return len(records)


def _current_state(broker: BrokerRegistration) -> BrokerControlState:
    if broker.fenced:
        return BrokerControlState.FENCED
    if broker.in_controlled_shutdown:
        return BrokerControlState.CONTROLLED_SHUTDOWN
    return BrokerControlState.UNFENCED


def _next_state(
    broker: BrokerRegistration, request: BrokerHeartbeatRequest, leads: bool, shutdown_seen: bool
) -> BrokerControlState:
    S = BrokerControlState
    current = _current_state(broker)
    if current is S.FENCED:
        if request.want_shut_down:
            return S.SHUTDOWN_NOW
        caught_up = request.current_metadata_offset >= broker.epoch
        if not request.want_fence and caught_up and not broker.in_controlled_shutdown:
            return S.UNFENCED
        return S.FENCED
    if current is S.UNFENCED:
        if request.want_fence:
            return S.SHUTDOWN_NOW if request.want_shut_down else S.FENCED
        if request.want_shut_down:
            return S.CONTROLLED_SHUTDOWN if leads else S.SHUTDOWN_NOW
        return S.UNFENCED
    if leads or not shutdown_seen:
        return S.CONTROLLED_SHUTDOWN
    return S.SHUTDOWN_NOW


def _needs_leads(broker: BrokerRegistration, request: BrokerHeartbeatRequest) -> bool:
    """Whether ``_next_state`` looks at the broker's leaderships (a scan) for this heartbeat."""
    current = _current_state(broker)
    if current is BrokerControlState.UNFENCED:
        return request.want_shut_down and not request.want_fence
    return current is BrokerControlState.CONTROLLED_SHUTDOWN


def _heartbeat_problem(
    image: MetadataImage, broker_id: int, broker_epoch: int
) -> tuple[Errors, str] | None:
    broker = image.broker(broker_id)
    if broker is None:
        return Errors.BROKER_ID_NOT_REGISTERED, f"broker {broker_id} is not registered"
    if broker.epoch != broker_epoch:
        return Errors.STALE_BROKER_EPOCH, (
            f"expected broker epoch {broker.epoch}, but got broker epoch {broker_epoch}"
        )
    return None


def steady_heartbeat(
    committed: MetadataImage,
    working: MetadataImage,
    request: BrokerHeartbeatRequest,
    now_ms: int,
    sessions: BrokerSessions,
) -> BrokerHeartbeatResponse | None:
    """The answer to a heartbeat that changes nothing, or None when it may (then it waits
    its turn as an operation).

    Unfenced and asking neither to be fenced nor to shut down, or fenced and not yet
    able to leave that state: no record, no scan, and an answer the committed image
    already supports (the broker's registration is the same in the committed and the
    working image), so it need not wait behind a long operation's records. It refreshes
    the session as a full heartbeat does.
    """
    broker = working.broker(request.broker_id)
    if broker is None or broker.epoch != request.broker_epoch:
        return None
    if committed.broker(request.broker_id) != broker or broker.in_controlled_shutdown:
        return None
    if request.want_shut_down:
        return None
    if broker.fenced:
        caught_up = request.current_metadata_offset >= broker.epoch
        if caught_up and not request.want_fence:
            return None  # it would be unfenced now: records
    elif request.want_fence:
        return None
    sessions.touch(broker.broker_id, now_ms, request.current_metadata_offset)
    return BrokerHeartbeatResponse(
        is_caught_up=request.current_metadata_offset >= broker.epoch,
        is_fenced=broker.fenced,
        should_shut_down=False,
    )


def broker_heartbeat_steps(
    image: MetadataImage,
    request: BrokerHeartbeatRequest,
    version: int,
    ctx: ControllerContext,
    sessions: BrokerSessions,
) -> Steps[BrokerHeartbeatResponse]:
    """One heartbeat: refresh the session and move the broker (see the module table)."""
    problem = _heartbeat_problem(image, request.broker_id, request.broker_epoch)
    if problem is not None:
        return BrokerHeartbeatResponse(error_code=problem[0])
    broker = image.brokers[request.broker_id]
    broker_id = broker.broker_id
    # a controller that took over mid-shutdown waits for everything it has written
    shutdown_offset = sessions.controlled_shutdown_offset(broker_id)
    if shutdown_offset is None:
        shutdown_offset = image.provenance.offset - 1
    leads = (yield from _leads_any(image, broker_id)) if _needs_leads(broker, request) else False
    shutdown_seen = all(
        sessions.metadata_offset(other) >= shutdown_offset
        for other in image.active_broker_ids()
        if other != broker_id
    )
    state = _next_state(broker, request, leads, shutdown_seen)
    written = yield from _transition_steps(image, broker, state, ctx)
    sessions.touch(broker_id, ctx.now_ms, request.current_metadata_offset)
    if state.fenced:
        sessions.set_controlled_shutdown_offset(broker_id, None)
    elif state is BrokerControlState.CONTROLLED_SHUTDOWN:
        # the records ran to just before the next offset (later, never earlier, is safe)
        end = ctx.append_offset() - 1 if written else shutdown_offset
        sessions.set_controlled_shutdown_offset(broker_id, end)
    if state is not _current_state(broker):
        logger.info("broker %d: %s -> %s", broker_id, _current_state(broker).value, state.value)
    return BrokerHeartbeatResponse(
        is_caught_up=request.current_metadata_offset >= broker.epoch,
        is_fenced=state.fenced,
        should_shut_down=state is BrokerControlState.SHUTDOWN_NOW,
    )


broker_heartbeat = at_once("BrokerHeartbeat", broker_heartbeat_steps)


# -- unregistration and session expiry ---------------------------------------------------------


def unregister_broker_steps(
    image: MetadataImage,
    request: UnregisterBrokerRequest,
    version: int,
    ctx: ControllerContext,
    sessions: BrokerSessions | None = None,
) -> Steps[UnregisterBrokerResponse]:
    """Take the broker out of every ISR and leadership, then drop its registration."""
    broker = image.broker(request.broker_id)
    if broker is None:
        return UnregisterBrokerResponse(
            error_code=Errors.BROKER_ID_NOT_REGISTERED,
            error_message=f"broker {request.broker_id} is not registered",
        )
    removals = yield from _scan_removals(image, broker.broker_id, ctx)
    gone = UnregisterBrokerRecord(broker_id=broker.broker_id, broker_epoch=broker.epoch)
    yield from emit_in_slices([*removals, gone])
    if sessions is not None:
        sessions.remove(broker.broker_id)
    return UnregisterBrokerResponse(error_message=None)


unregister_broker = at_once("UnregisterBroker", unregister_broker_steps)


def fence_stale_brokers_steps(
    image: MetadataImage, ctx: ControllerContext, sessions: BrokerSessions
) -> Steps[None]:
    """Fence the longest-silent unfenced broker whose session expired (at most one).

    One per operation, as Kafka fences one per event: the next one is judged on
    an image that already shows the first fenced (leaders moved once, not twice).
    """
    timeout_ms = ctx.config.broker_session_timeout_ms
    for broker_id in sessions.expired(ctx.now_ms, timeout_ms):
        broker = image.broker(broker_id)
        if broker is None or broker.fenced:
            continue
        logger.info("fencing broker %d: no heartbeat for %d ms", broker_id, timeout_ms)
        sessions.set_controlled_shutdown_offset(broker_id, None)
        yield from _transition_steps(image, broker, BrokerControlState.FENCED, ctx)
        return None
    return None


fence_stale_brokers = at_once("FenceBroker", fence_stale_brokers_steps)


def next_fence_deadline_ms(
    image: MetadataImage, sessions: BrokerSessions, timeout_ms: int
) -> int | None:
    """When the first unfenced broker's session expires (None: no unfenced broker)."""
    deadlines = (
        sessions.expiry_ms(broker.broker_id, timeout_ms)
        for broker in image.brokers.values()
        if not broker.fenced
    )
    return min((d for d in deadlines if d is not None), default=None)
