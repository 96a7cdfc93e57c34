"""Broker lifecycle commands: registration, heartbeats, unregistration, session expiry.

Facts from Kafka's ClusterControlManager / BrokerHeartbeatManager (kraft-facts
5.3, 5.4). A broker's state comes from the image: FENCED (``fenced``),
CONTROLLED_SHUTDOWN (unfenced, ``in_controlled_shutdown``) or UNFENCED. A
heartbeat moves it (this docstring is the transition table; "holds" is
whether the broker may still lead a partition or share an ISR, ``holds``):

=====================  ==========================================  ====================
from                   heartbeat                                   to
=====================  ==========================================  ====================
FENCED                 WantShutDown                                SHUTDOWN_NOW
FENCED                 not WantFence, caught up [1], holds none    UNFENCED
FENCED                 otherwise                                   FENCED
UNFENCED               WantFence and WantShutDown                  SHUTDOWN_NOW [3]
UNFENCED               WantFence                                   FENCED [3]
UNFENCED               WantShutDown, holds none                    SHUTDOWN_NOW
UNFENCED               WantShutDown, otherwise                     CONTROLLED_SHUTDOWN [3]
UNFENCED               otherwise                                   UNFENCED
CONTROLLED_SHUTDOWN    holds none, active brokers caught up [2]    SHUTDOWN_NOW
CONTROLLED_SHUTDOWN    otherwise                                   CONTROLLED_SHUTDOWN
=====================  ==========================================  ====================

[1] ``CurrentMetadataOffset >= broker epoch`` (the offset of its
RegisterBrokerRecord, so the broker has applied its own registration). A
fenced broker still marked in controlled shutdown (it was told to shut down)
is never unfenced: only a new registration clears the mark. A fenced broker
that may still hold partitions stays fenced until it surely holds none (a
departure cut short by a change of active controller is finished first).
[2] Every active broker (unfenced, not shutting down) has reported a metadata
offset at or past the last record that moved this broker's leaderships away
(Kafka's lowest-active-offset rule), so no active broker still routes to it.
A controller that took over in the middle of a shutdown does not know that
offset and uses the end of its working image instead (later, never earlier).
[3] Fenced through a departure job (``partition_jobs.departure_job``): the
broker's leaderships and shared ISR places move in parts, between other
operations, and its fence record follows the last part, in Kafka's order
(partitions first), so no image shows a fenced leader. The answer tells the
state reached so far; the broker asks again.

Records: at most one per heartbeat, at once: UNFENCED writes ``fenced=-1``
and hands the elections of leaderless partitions to a job in parts;
CONTROLLED_SHUTDOWN writes ``in_controlled_shutdown=1`` first (Kafka's order:
from then on the broker is given no leadership and no ISR place, so the job
that moves its own away in parts has nothing to chase) and marks where that
job ends ([2]); SHUTDOWN_NOW writes ``fenced=1`` (the broker holds nothing by
then; an already fenced broker writes nothing). So no heartbeat's answer
waits for 100,000 partition changes, and every other broker's request runs
between a job's parts. Images between those parts show a shutting-down
broker still leading some partitions: it is alive and serves them until its
job moves them (Kafka writes the mark and the moves in one batch).

Log directories are neither checked at registration nor written, and a
heartbeat's OfflineLogDirs is ignored: pykraft brokers have one log directory
and do no directory assignment (KIP-858).

Session state (``BrokerSessions``) is soft state outside the log: these
commands update it as Kafka's heartbeat manager is updated while a command
runs; a rejected request leaves it untouched.
"""

from __future__ import annotations

import enum
import functools
import logging
from collections.abc import Generator
from typing import Final

from quorum.controller.broker_registration import (
    METADATA_VERSION_FEATURE,
    register_broker_record,
    registration_problem,
)
from quorum.controller.broker_sessions import BrokerSessions
from quorum.controller.image import BrokerRegistration, MetadataImage
from quorum.controller.local_jobs import LocalJobs, at_once_with_jobs
from quorum.controller.operations import (
    Operation,
    Slice,
    Steps,
    at_once,
    emit_in_slices,
    scan_in_slices,
)
from quorum.controller.partition_change import broker_removal_examiner
from quorum.controller.partition_jobs import (
    departure_job,
    election_job,
    fence_job,
    removal_job,
)
from quorum.controller.results import (
    Background,
    ControllerConfig,
    ControllerContext,
    ControllerResult,
)
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
    "fence_key",
    "fence_stale_brokers",
    "fence_stale_brokers_steps",
    "holds",
    "next_fence_deadline_ms",
    "register_broker",
    "register_broker_steps",
    "same_registration",
    "stale_broker",
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
    of a broker that may still lead partitions or sit in ISRs (it restarted
    without a controlled shutdown, maybe losing its unflushed tail) is first
    taken out of them, in parts, and registered right after the last part
    (Kafka 3.9 does that only with ELR on); one that holds nothing is one
    record.
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

    def record(_image: MetadataImage) -> MetadataRecord:
        return register_broker_record(request, ctx.append_offset())  # epoch = its offset

    if existing is None or holds(ctx, broker_id) is False:
        epoch = ctx.append_offset()
        yield Slice((record(image),))
    else:
        written = yield from departure_job(ctx, broker_id, record)
        assert written is not None
        epoch = written
    sessions.touch(broker_id, ctx.now_ms)
    logger.info("broker %d registers incarnation %s with epoch %d",
                broker_id, request.incarnation_id, epoch)
    return BrokerRegistrationResponse(broker_epoch=epoch)


register_broker = at_once_with_jobs("BrokerRegistration", register_broker_steps)


def same_registration(
    committed: MetadataImage, working: MetadataImage, request: BrokerRegistrationRequest
) -> int | None:
    """The epoch of a registration retried by the same incarnation, when the committed
    image already holds it as the working one does (answered at once, nothing written);
    None: it runs as an operation."""
    broker = working.broker(request.broker_id)
    if broker is None or broker.incarnation_id != request.incarnation_id:
        return None
    if committed.broker(request.broker_id) != broker:
        return None
    return broker.epoch


# -- the jobs a transition hands on ---------------------------------------------------------


def _key(kind: str, broker_id: int) -> tuple[str, int]:
    return (kind, broker_id)


def fence_key(broker_id: int) -> tuple[str, int]:
    return _key("fence", broker_id)


_DEPARTURES: Final = ("fence", "removals")


def _background(ctx: ControllerContext) -> Background:
    assert ctx.background is not None, "a lifecycle command runs with a background"
    return ctx.background


def holds(ctx: ControllerContext, broker_id: int) -> bool | None:
    """Whether the broker may lead a partition or share an ISR in the working image:
    False only when known not to (the partition index, ``ControllerContext.may_hold``);
    None while a job is taking them away or the index cannot tell yet."""
    background = _background(ctx)
    if any(background.running(_key(kind, broker_id)) for kind in _DEPARTURES):
        return None
    return None if ctx.may_hold is None else ctx.may_hold(broker_id)


def _start_fencing(ctx: ControllerContext, broker: BrokerRegistration) -> None:
    _background(ctx).spawn(
        fence_key(broker.broker_id), "FenceBroker", fence_job(ctx, broker.broker_id, broker.epoch)
    )


def _start_removals(
    ctx: ControllerContext, broker_id: int, sessions: BrokerSessions | None = None
) -> None:
    """An inactive broker (shutting down, or fenced with a departure cut short) leaves its
    leaderships and shared ISR places in a job; with ``sessions``, where its records end
    is the point the other brokers must reach before it may go ([2])."""

    def steps() -> Steps[None]:
        yield from removal_job(ctx, broker_id)
        if sessions is not None and broker_id in sessions:
            sessions.extend_controlled_shutdown_offset(broker_id, ctx.append_offset() - 1)
        return None

    _background(ctx).spawn(_key("removals", broker_id), "BrokerRemovals", steps())


# -- heartbeats ------------------------------------------------------------------------------


def _current_state(broker: BrokerRegistration) -> BrokerControlState:
    if broker.fenced:
        return BrokerControlState.FENCED
    if broker.in_controlled_shutdown:
        return BrokerControlState.CONTROLLED_SHUTDOWN
    return BrokerControlState.UNFENCED


def _next_state(
    ctx: ControllerContext,
    broker: BrokerRegistration,
    request: BrokerHeartbeatRequest,
    shutdown_seen: bool,
) -> BrokerControlState:
    """The state the module table moves ``broker`` to."""
    S = BrokerControlState
    current = _current_state(broker)
    broker_id = broker.broker_id
    if current is S.FENCED:
        if request.want_shut_down:
            return S.SHUTDOWN_NOW
        caught_up = request.current_metadata_offset >= broker.epoch
        if request.want_fence or not caught_up or broker.in_controlled_shutdown:
            return S.FENCED
        return S.UNFENCED if holds(ctx, broker_id) is False else S.FENCED
    if current is S.UNFENCED:
        if request.want_fence:
            return S.SHUTDOWN_NOW if request.want_shut_down else S.FENCED
        if request.want_shut_down:
            return S.SHUTDOWN_NOW if holds(ctx, broker_id) is False else S.CONTROLLED_SHUTDOWN
        return S.UNFENCED
    if shutdown_seen and holds(ctx, broker_id) is False:
        return S.SHUTDOWN_NOW
    return S.CONTROLLED_SHUTDOWN


def _transition(
    ctx: ControllerContext,
    broker: BrokerRegistration,
    target: BrokerControlState,
    sessions: BrokerSessions,
    *,
    want_fence: bool,
) -> tuple[BrokerControlState, list[MetadataRecord]]:
    """The state reached now and the record that reaches it (the module's Records); a
    departure that has partitions to move runs as a job and reaches its state later."""
    S = BrokerControlState
    current = _current_state(broker)
    broker_id, epoch = broker.broker_id, broker.epoch
    change = functools.partial(
        BrokerRegistrationChangeRecord, broker_id=broker_id, broker_epoch=epoch
    )
    if current is S.FENCED:
        if target is S.UNFENCED:
            _background(ctx).spawn(_key("elections", broker_id), "UnfenceElections",
                                   election_job(ctx, broker_id))
            return target, [change(fenced=-1)]
        if target is S.FENCED and holds(ctx, broker_id) is True:
            _start_removals(ctx, broker_id)  # a departure cut short: it finishes first
        return target, []  # (SHUTDOWN_NOW: fenced already)
    if current is S.UNFENCED and want_fence:
        _start_fencing(ctx, broker)
        return current, []
    if current is S.UNFENCED and target is S.CONTROLLED_SHUTDOWN:
        # the mark first (Kafka's order): the broker takes no new leadership or ISR place
        # from here on, so its removals need not follow anything
        _start_removals(ctx, broker_id, sessions)
        return target, [change(in_controlled_shutdown=1)]
    if target is S.SHUTDOWN_NOW:
        return target, [change(fenced=1)]
    if current is S.CONTROLLED_SHUTDOWN and holds(ctx, broker_id) is True:
        _start_removals(ctx, broker_id, sessions)  # a controller that took over
    return current, []


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
    ctx: ControllerContext,
    sessions: BrokerSessions,
) -> BrokerHeartbeatResponse | None:
    """The answer to a heartbeat that changes nothing, or None when it may (then it waits
    its turn as an operation).

    Unfenced and asking neither to be fenced nor to shut down, or fenced and not able
    to leave that state now (not
    caught up, asking to stay fenced, or maybe still holding partitions: then, if it
    surely does, the job that takes them away is started): no record, no scan, and an
    answer the committed image already supports (the broker's registration is the same
    in the committed and the working image), so it need not wait behind a long
    operation. It refreshes the session as a full heartbeat does.
    """
    broker = working.broker(request.broker_id)
    if broker is None or broker.epoch != request.broker_epoch:
        return None
    if committed.broker(request.broker_id) != broker or broker.in_controlled_shutdown:
        return None
    broker_id = broker.broker_id
    if request.want_shut_down:
        return None
    if broker.fenced:
        caught_up = request.current_metadata_offset >= broker.epoch
        if caught_up and not request.want_fence:
            held = holds(ctx, broker_id)
            if held is False:
                return None  # it would be unfenced now: a record
            if held is True:
                _start_removals(ctx, broker_id)
    elif request.want_fence:
        return None
    sessions.touch(broker.broker_id, ctx.now_ms, request.current_metadata_offset)
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
    shutdown_seen = all(
        sessions.metadata_offset(other) >= shutdown_offset
        for other in image.active_broker_ids()
        if other != broker_id
    )
    target = _next_state(ctx, broker, request, shutdown_seen)
    mark_offset = ctx.append_offset()
    state, records = _transition(ctx, broker, target, sessions, want_fence=request.want_fence)
    yield from emit_in_slices(records)
    sessions.touch(broker_id, ctx.now_ms, request.current_metadata_offset)
    if state.fenced:
        sessions.set_controlled_shutdown_offset(broker_id, None)
    elif state is BrokerControlState.CONTROLLED_SHUTDOWN and records:
        # the removals' job moves this point on to where its records end
        sessions.set_controlled_shutdown_offset(broker_id, mark_offset)
    if state is not _current_state(broker):
        logger.info("broker %d: %s -> %s", broker_id, _current_state(broker).value, state.value)
    return BrokerHeartbeatResponse(
        is_caught_up=request.current_metadata_offset >= broker.epoch,
        is_fenced=state.fenced,
        should_shut_down=state is BrokerControlState.SHUTDOWN_NOW,
    )


broker_heartbeat = at_once_with_jobs("BrokerHeartbeat", broker_heartbeat_steps)


def _scan_removals(
    image: MetadataImage, broker_id: int, ctx: ControllerContext
) -> Generator[Slice, None, list[PartitionChangeRecord]]:
    examine = broker_removal_examiner(
        image, broker_id, unclean_default=ctx.config.unclean_leader_election_enable
    )
    return (yield from scan_in_slices(image.iter_partitions(), examine))


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
    """Fence the longest-silent unfenced broker whose session expired (at most one), in
    parts (``partition_jobs.fence_job``).

    One at a time, as Kafka fences one per event: the next one is judged on
    an image that already shows the first fenced (leaders moved once, not twice).
    """
    broker_id = stale_broker(image, ctx, sessions)
    if broker_id is None:
        return None
    broker = image.brokers[broker_id]
    if sessions.lost_connection(broker_id):
        logger.info("fencing broker %d: its connections closed and no heartbeat followed "
                    "within %d ms", broker_id, lost_connection_grace_ms(ctx.config))
    else:
        logger.info("fencing broker %d: no heartbeat for %d ms", broker_id,
                    ctx.config.broker_session_timeout_ms)
    sessions.set_controlled_shutdown_offset(broker_id, None)
    yield from fence_job(ctx, broker_id, broker.epoch)
    return None


def lost_connection_grace_ms(config: ControllerConfig) -> int:
    """How long a broker whose connections to the active controller all closed has to be
    heard from again before it is fenced: two heartbeat intervals (a live broker that lost
    a connection reconnects and heartbeats within one), never more than its session."""
    return min(2 * config.broker_heartbeat_interval_ms, config.broker_session_timeout_ms)


def stale_broker(
    image: MetadataImage, ctx: ControllerContext, sessions: BrokerSessions
) -> int | None:
    """The longest-silent unfenced broker whose session expired (None: there is none)."""
    for broker_id in sessions.expired(ctx.now_ms, ctx.config.broker_session_timeout_ms):
        broker = image.broker(broker_id)
        if broker is not None and not broker.fenced:
            return broker_id
    return None


def fence_stale_brokers(
    image: MetadataImage, ctx: ControllerContext, sessions: BrokerSessions
) -> ControllerResult[None]:
    """``fence_stale_brokers_steps`` run to the end at once (tests and tools)."""
    local = LocalJobs(image, ctx)
    steps = fence_stale_brokers_steps(image, local.context, sessions)
    return local.run(Operation("FenceBroker", steps))


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
