"""A group member's commits: sync, async, and the committed offsets it reads (trio).

The offsets are the consumer's positions (``consumed``) unless given;
they go to the coordinator ``GroupCore`` knows (looked up again as it
moves, which ``GroupCore`` hears). A member of a subscribed group commits
with its generation, only while STABLE (Kafka's ``generationIfStable``:
during a rebalance REBALANCE_IN_PROGRESS, after being fenced
``CommitFailedError``); a consumer that ``assign()``-ed its partitions
commits from outside the group (generation -1). An async commit's
``callback(offsets, error)`` runs in a later poll, in the polling task.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping

from broker.client.errors import CommitFailedError, KafkaError, error_from_code
from broker.client.fetch_core import FetchCore
from broker.client.group_calls import commit_offsets, fetch_committed
from broker.client.group_core import GroupCore, MemberState
from broker.client.group_requests import Coordinator
from broker.client.network import KafkaClient, now_ms
from broker.client.types import OffsetAndMetadata, TopicPartition
from quorum.wire.error_codes import Errors

__all__ = ["CommitCallback", "GroupCommits"]

logger = logging.getLogger(__name__)
Apply = Callable[[], None]
Spawn = Callable[[Callable[[], Awaitable[Apply]]], None]
CommitCallback = Callable[[Mapping[TopicPartition, OffsetAndMetadata], KafkaError | None], None]


class GroupCommits:
    def __init__(self, core: GroupCore, client: KafkaClient, fetch: FetchCore,
                 spawn: Spawn) -> None:
        self.core = core
        self.settings = core.settings
        self._client = client
        self._fetch = fetch
        self._spawn = spawn

    def _deliver(self, apply: Apply) -> None:
        async def done() -> Apply:
            return apply
        self._spawn(done)

    def consumed(self) -> dict[TopicPartition, OffsetAndMetadata]:
        """The position of every assigned partition that has one (what auto-commit sends)."""
        positions, out = self._fetch.positions, {}
        for tp in positions.assigned:
            position = positions.position(tp)
            if position is not None:
                out[tp] = OffsetAndMetadata(position.offset, "", position.offset_epoch)
        return out

    def _generation(self) -> tuple[int, str]:
        core = self.core
        if not core.subscribed:
            return -1, ""  # assign() with a group.id: commits from outside the group
        if core.state is MemberState.STABLE:
            return core.generation, core.member_id
        if core.state is not MemberState.UNJOINED or core.generation >= 0:
            raise KafkaError(Errors.REBALANCE_IN_PROGRESS,
                             "Offset commit cannot be completed since the consumer is undergoing "
                             "a rebalance for auto partition assignment. You can try completing "
                             "the rebalance by calling poll() and then retry the operation.")
        raise CommitFailedError(Errors.UNKNOWN_MEMBER_ID)

    def _found(self, coordinator: Coordinator | None) -> None:
        if coordinator is None:
            self.core.coordinator_unknown(now_ms())
        else:
            self.core.coordinator_found(coordinator)

    async def commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata] | None,
                     timeout_ms: float) -> None:
        """Commit ``offsets`` (None: the consumed positions) and wait for the answer."""
        wanted = self.consumed() if offsets is None else dict(offsets)
        if not wanted:
            return
        generation, member = self._generation()
        core = self.core
        errors = await commit_offsets(
            self._client, core.group_id, wanted, timeout_ms=timeout_ms, generation=generation,
            member_id=member, instance_id=core.instance_id, coordinator=core.coordinator,
            on_found=self._found,
        )
        self._raise_commit_errors(errors)

    def _raise_commit_errors(self, errors: Mapping[TopicPartition, Errors]) -> None:
        for tp, error in sorted(errors.items()):
            if error is Errors.NONE:
                continue
            self.core.handle_commit_error(error, now_ms())
            if error in (Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION):
                raise CommitFailedError(error)
            raise error_from_code(error, None, context=f"OffsetCommit of {tp}")

    def commit_async(self, offsets: Mapping[TopicPartition, OffsetAndMetadata] | None,
                     callback: CommitCallback | None) -> None:
        """Send a commit and return; ``callback(offsets, error)`` runs at a later poll."""
        wanted = self.consumed() if offsets is None else dict(offsets)
        if not wanted:
            return
        try:
            generation, member = self._generation()
        except KafkaError as exc:
            refused = exc
            self._deliver(lambda: self._committed(wanted, None, refused, callback))
            return
        core, client = self.core, self._client

        async def send() -> Apply:
            try:
                errors = await commit_offsets(
                    client, core.group_id, wanted, timeout_ms=self.settings.default_api_timeout_ms,
                    generation=generation, member_id=member, instance_id=core.instance_id,
                    coordinator=core.coordinator,
                )
            except KafkaError as exc:
                failure = exc
                return lambda: self._committed(wanted, None, failure, callback)
            return lambda: self._committed(wanted, errors, None, callback)
        self._spawn(send)

    def _committed(self, offsets: Mapping[TopicPartition, OffsetAndMetadata],
                   errors: Mapping[TopicPartition, Errors] | None, error: KafkaError | None,
                   callback: CommitCallback | None) -> None:
        if error is None and errors is not None:
            try:
                self._raise_commit_errors(errors)
            except KafkaError as exc:
                error = exc
        if error is not None and callback is None:
            logger.warning("asynchronous commit for group %s failed: %s", self.core.group_id,
                           error)
        if callback is not None:
            callback(offsets, error)

    async def committed(self, partitions: Iterable[TopicPartition], timeout_ms: float
                        ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        wanted = list(partitions)
        found = await fetch_committed(self._client, self.core.group_id, wanted,
                                      timeout_ms=timeout_ms, require_stable=True,
                                      coordinator=self.core.coordinator, on_found=self._found)
        return {tp: found.get(tp) for tp in wanted}
