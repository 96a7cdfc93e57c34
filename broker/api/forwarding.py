"""``ControllerForwarder``: a broker sends admin requests on to the active controller.

Kafka's clients send CreateTopics, DeleteTopics, config changes and the
like to a broker (a broker's Metadata names a broker as the controller), and
in KRaft the broker forwards them to the active controller and returns its
answer; DescribeQuorum too (``kafka-metadata-quorum --bootstrap-server``),
which the quorum leader answers. Kafka wraps them in an Envelope carrying the client's principal;
pykraft has no authentication yet, so the broker re-sends the request itself
at the client's version (every forwarded API's broker range lies inside the
controller's). Forwards go through the broker's ``BrokerControllerChannel``
(its forwarding lane: to the quorum leader, resent on NOT_CONTROLLER or a
broken connection, a bounded number at once). A forward that
no controller answers within the request's own ``timeout_ms`` (or 30 s when
it has none, like DescribeQuorum, or one of zero or below) is answered with REQUEST_TIMED_OUT in
the request's response shape, so the client's connection never hangs.
A topic created or deleted, or partitions added, are answered once the
broker's own image shows them (within the same timeout;
``broker.api.forward_visibility`` says why).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final

import trio

from broker.api.forward_visibility import ImagePredicate, visible_when
from broker.controller_channel import (
    BrokerControllerChannel,
    ControllerLane,
    ControllerUnavailableError,
)
from quorum.controller.error_responses import error_response
from quorum.wire import ApiKey
from quorum.wire.error_codes import Errors
from quorum.wire.messages import DescribeQuorumRequest

__all__ = ["DEFAULT_FORWARD_TIMEOUT_MS", "FORWARDED_APIS", "ControllerForwarder"]

logger = logging.getLogger(__name__)

DEFAULT_FORWARD_TIMEOUT_MS: Final = 30_000
# DescribeConfigs is not among them: a broker answers it with its own settings
FORWARDED_APIS: Final = frozenset({
    ApiKey.CREATE_TOPICS,
    ApiKey.DELETE_TOPICS,
    ApiKey.CREATE_PARTITIONS,
    ApiKey.ELECT_LEADERS,
    ApiKey.INCREMENTAL_ALTER_CONFIGS,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS,
    ApiKey.LIST_PARTITION_REASSIGNMENTS,
    ApiKey.DESCRIBE_QUORUM,
})
# what says "not the leader any more": the controller's answer, and the Raft
# layer's (DescribeQuorum is answered by the quorum leader, and between an
# election and the controller's claim the two can differ for a moment)
_MOVED: Final = frozenset({Errors.NOT_CONTROLLER})
_MOVED_DESCRIBE_QUORUM: Final = frozenset({Errors.NOT_CONTROLLER, Errors.NOT_LEADER_OR_FOLLOWER})


class ControllerForwarder:
    def __init__(
        self,
        channel: BrokerControllerChannel,
        *,
        default_timeout_ms: int = DEFAULT_FORWARD_TIMEOUT_MS,
        image_wait: Callable[[ImagePredicate], Awaitable[object]] | None = None,
    ) -> None:
        self._channel = channel
        self._image_wait = image_wait
        self._default_timeout_ms = default_timeout_ms

    async def forward(self, request: Any, version: int) -> Any:
        """The active controller's response to ``request``, or a REQUEST_TIMED_OUT one."""
        timeout_ms = getattr(request, "timeout_ms", 0)
        if timeout_ms <= 0:  # no usable deadline: wait as long as for a request without one
            timeout_ms = self._default_timeout_ms
        moved = _MOVED_DESCRIBE_QUORUM if isinstance(request, DescribeQuorumRequest) else _MOVED
        start = trio.current_time()
        try:
            response = await self._channel.call(
                request,
                lane=ControllerLane.FORWARDING,
                timeout_ms=timeout_ms,
                version=version,
                moved=moved,
            )
        except ControllerUnavailableError as exc:
            logger.info("forwarding %s failed: %s", type(request).__name__, exc)
            return error_response(
                request, Errors.REQUEST_TIMED_OUT, str(exc), version=version
            )
        shown = visible_when(request, response)
        if shown is not None and self._image_wait is not None:
            left_s = timeout_ms / 1000 - (trio.current_time() - start)
            # the change is committed either way: past the deadline it is answered as is
            with trio.move_on_after(max(left_s, 0)), contextlib.suppress(trio.ClosedResourceError):
                await self._image_wait(shown)
        return response
