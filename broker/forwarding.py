"""``ControllerForwarder``: a broker sends admin requests on to the active controller.

Kafka's clients send CreateTopics, DeleteTopics, config changes and the
like to a broker (a broker's Metadata names a broker as the controller), and
in KRaft the broker forwards them to the active controller and returns its
answer; DescribeQuorum too (``kafka-metadata-quorum --bootstrap-server``),
which the quorum leader answers. Kafka wraps them in an Envelope carrying the client's principal;
pykraft has no authentication yet, so the broker re-sends the request itself
at the client's version (every forwarded API's broker range lies inside the
controller's). Each forward uses a ``ControllerChannel`` (it finds the
active controller through the voters and retries on NOT_CONTROLLER or a
broken connection); idle channels are kept for the next forward, and at most
``max_in_flight`` forwards run at once (more wait for a slot). A forward that
no controller answers within the request's own ``timeout_ms`` (or 30 s when
it has none, like DescribeQuorum, or one of zero or below) is answered with REQUEST_TIMED_OUT in
the request's response shape, so the client's connection never hangs.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

import trio

from quorum.config.values import HostPort
from quorum.controller.error_responses import error_response
from quorum.controller_client import ControllerChannel, ControllerUnavailableError
from quorum.quorum_admin import AdminSettings
from quorum.wire.error_codes import Errors
from quorum.wire.messages import DescribeQuorumRequest

__all__ = ["DEFAULT_FORWARD_TIMEOUT_MS", "FORWARDED_APIS", "ControllerForwarder"]

logger = logging.getLogger(__name__)

DEFAULT_FORWARD_TIMEOUT_MS: Final = 30_000
_DESCRIBE_QUORUM_KEY: Final = 55
# CreateTopics, DeleteTopics, DescribeConfigs, CreatePartitions, ElectLeaders,
# IncrementalAlterConfigs, Alter/ListPartitionReassignments, DescribeQuorum
FORWARDED_APIS: Final = frozenset({19, 20, 32, 37, 43, 44, 45, 46, _DESCRIBE_QUORUM_KEY})
# what says "not the leader any more": the controller's answer, and the Raft
# layer's (DescribeQuorum is answered by the quorum leader, and between an
# election and the controller's claim the two can differ for a moment)
_MOVED: Final = frozenset({Errors.NOT_CONTROLLER})
_MOVED_DESCRIBE_QUORUM: Final = frozenset({Errors.NOT_CONTROLLER, Errors.NOT_LEADER_OR_FOLLOWER})


class ControllerForwarder:
    def __init__(
        self,
        voters: Mapping[int, tuple[str, int]],
        *,
        retry_backoff_ms: int = 20,
        max_in_flight: int = 16,
        default_timeout_ms: int = DEFAULT_FORWARD_TIMEOUT_MS,
    ) -> None:
        self._bootstrap = [HostPort(host, port) for _, (host, port) in sorted(voters.items())]
        self._default_timeout_ms = default_timeout_ms
        self._retry_backoff_ms = retry_backoff_ms
        self._slots = trio.Semaphore(max_in_flight)
        self._idle: list[ControllerChannel] = []
        self._closed = False

    async def forward(self, request: Any, version: int) -> Any:
        """The active controller's response to ``request``, or a REQUEST_TIMED_OUT one."""
        timeout_ms = getattr(request, "timeout_ms", 0)
        if timeout_ms <= 0:  # no usable deadline: wait as long as for a request without one
            timeout_ms = self._default_timeout_ms
        settings = AdminSettings(
            api_timeout_ms=timeout_ms,
            # one attempt may take the whole budget: cutting it short and resending a
            # change the controller is still committing would report TOPIC_ALREADY_EXISTS
            # for a creation that worked; only a broken connection or NOT_CONTROLLER retries
            request_timeout_ms=timeout_ms,
            retry_backoff_ms=self._retry_backoff_ms,
        )
        async with self._slots:
            channel = self._idle.pop() if self._idle else ControllerChannel(self._bootstrap)
            channel.settings = settings
            try:
                moved = (
                    _MOVED_DESCRIBE_QUORUM if isinstance(request, DescribeQuorumRequest) else _MOVED
                )
                response = await channel.call(request, version=version, moved=moved)
            except ControllerUnavailableError as exc:
                await channel.aclose()
                logger.info("forwarding %s failed: %s", type(request).__name__, exc)
                return error_response(request, Errors.REQUEST_TIMED_OUT, str(exc))
            except BaseException:
                # cancelled mid-request: the connection may hold a late answer
                with trio.CancelScope(shield=True):
                    await channel.aclose()
                raise
            if self._closed:
                await channel.aclose()
            else:
                self._idle.append(channel)
            return response

    async def aclose(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for channel in idle:
            await channel.aclose()
