"""The consumer's group calls: subscribe, unsubscribe, commit, commit_async, committed.

Mixed into ``Consumer``, which provides the fields named below; each call
goes to the consumer's ``GroupMember`` (``group_member``), and without a
``group.id`` is refused with Kafka's InvalidGroupIdException text.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

from broker.client.errors import KafkaError
from broker.client.fetch_core import FetchCore
from broker.client.group_commits import CommitCallback
from broker.client.group_member import ConsumerRebalanceListener, GroupMember
from broker.client.network import KafkaClient
from broker.client.settings import ConsumerSettings
from broker.client.types import OffsetAndMetadata, TopicPartition
from quorum.wire.error_codes import Errors

__all__ = ["EXCLUSIVE", "ConsumerGroupApi"]

EXCLUSIVE: Final = "Subscription to topics, partitions and pattern are mutually exclusive"


class ConsumerGroupApi:
    settings: ConsumerSettings
    _group: GroupMember | None
    _core: FetchCore
    _client: KafkaClient

    if TYPE_CHECKING:
        def _owner(self) -> contextlib.AbstractAsyncContextManager[Any]: ...

    # -- the group -----------------------------------------------------------------------

    def _member(self) -> GroupMember:
        if self._group is None:
            # Kafka's InvalidGroupIdException text
            raise KafkaError(Errors.INVALID_GROUP_ID,
                             "To use the group management or offset commit APIs, you must "
                             "provide a valid group.id in the consumer configuration.")
        return self._group

    def subscribe(
        self, topics: Iterable[str] = (), *, pattern: str | re.Pattern[str] | None = None,
        listener: ConsumerRebalanceListener | None = None,
    ) -> None:
        """Join the group for these topics, or every topic ``pattern`` matches in full.

        The group assigns partitions at the next ``poll``; ``listener`` hears of them.
        """
        member = self._member()
        wanted = frozenset(topics)
        if (pattern is None) == (not wanted):
            raise ValueError("subscribe to a list of topics or to a pattern (one of the two)")
        if self._core.positions.assigned and not member.core.subscribed:
            raise KafkaError(None, EXCLUSIVE)
        compiled = None if pattern is None else re.compile(pattern)
        member.core.subscribe(wanted, compiled)
        self._client.tracker.want_all_topics(compiled is not None)
        if compiled is not None:
            member.core.on_metadata(self._client.view)
        if listener is not None:
            member.listener = listener

    def subscription(self) -> set[str]:
        """The topics subscribed to (those a pattern matched so far)."""
        return set(self._group.core.topics) if self._group is not None else set()

    async def unsubscribe(self) -> None:
        """Give up the partitions (revoked) and leave the group (Kafka's unsubscribe)."""
        member = self._member()
        async with self._owner():
            await member.leave("the consumer unsubscribed", self.settings.default_api_timeout_ms,
                               commit=False)
            member.core.subscribe(frozenset(), None)
            self._client.tracker.want_all_topics(False)
            self._core.assign(())

    async def commit(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
        timeout_ms: float | None = None,
    ) -> None:
        """Commit ``offsets`` (the next offset to read; None: what poll has handed out)."""
        member = self._member()
        limit = self.settings.default_api_timeout_ms if timeout_ms is None else timeout_ms
        async with self._owner():
            await member.commits.commit(_offsets(offsets), limit)

    def commit_async(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
        callback: CommitCallback | None = None,
    ) -> None:
        """Send a commit without waiting; ``callback(offsets, error)`` runs in a later poll."""
        self._member().commits.commit_async(_offsets(offsets), callback)

    async def committed(
        self, partitions: Iterable[TopicPartition], timeout_ms: float | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offset of each partition (None: none committed)."""
        member = self._member()
        limit = self.settings.default_api_timeout_ms if timeout_ms is None else timeout_ms
        return await member.commits.committed(partitions, limit)


def _offsets(
    offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None,
) -> dict[TopicPartition, OffsetAndMetadata] | None:
    if offsets is None:
        return None
    return {tp: o if isinstance(o, OffsetAndMetadata) else OffsetAndMetadata(o)
            for tp, o in offsets.items()}
