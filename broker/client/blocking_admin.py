"""``BlockingAdmin``: ``Admin``'s calls for code without trio (see ``broker.client.blocking``).

It runs its trio ``Admin`` in a ``LoopThread`` of its own; ``close`` (or
the ``with`` block's end) joins that thread.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

from broker.client.admin import Admin
from broker.client.admin_groups import ConsumerGroupDescription, GroupListing
from broker.client.admin_types import (
    AlterConfigOp,
    ClusterDescription,
    ConfigEntry,
    ConfigResource,
    ElectionType,
    LogDirDescription,
    NewPartitions,
    NewTopic,
    PartitionReassignment,
    TopicDescription,
)
from broker.client.errors import KafkaError
from broker.client.loop_thread import LoopThread
from broker.client.settings import AdminClientSettings, settings_from
from broker.client.types import OffsetAndMetadata, OffsetAndTimestamp, TopicPartition
from quorum.describe import QuorumInfo

__all__ = ["BlockingAdmin"]


class BlockingAdmin:
    """``Admin``'s calls, blocking; see ``broker.client.admin`` for what each does."""

    def __init__(self, config: AdminClientSettings | Mapping[str, str]) -> None:
        settings = self.settings = settings_from(AdminClientSettings, config)

        def open_admin() -> AbstractAsyncContextManager[Admin]:
            return Admin(settings)

        self._loop: LoopThread[Admin] = LoopThread("pykraft-admin", open_admin)

    def create_topics(self, topics: Sequence[NewTopic], **options: Any) -> dict[str, KafkaError | None]:
        return self._loop.call(lambda admin: admin.create_topics(topics, **options))

    def delete_topics(self, names: Sequence[str], **options: Any) -> dict[str, KafkaError | None]:
        return self._loop.call(lambda admin: admin.delete_topics(names, **options))

    def create_partitions(
        self, topics: Mapping[str, NewPartitions], **options: Any
    ) -> dict[str, KafkaError | None]:
        return self._loop.call(lambda admin: admin.create_partitions(topics, **options))

    def list_topics(self, **options: Any) -> list[str]:
        return self._loop.call(lambda admin: admin.list_topics(**options))

    def describe_topics(self, names: Sequence[str], **options: Any) -> dict[str, TopicDescription]:
        return self._loop.call(lambda admin: admin.describe_topics(names, **options))

    def describe_cluster(self, **options: Any) -> ClusterDescription:
        return self._loop.call(lambda admin: admin.describe_cluster(**options))

    def describe_metadata_quorum(self, **options: Any) -> QuorumInfo:
        return self._loop.call(lambda admin: admin.describe_metadata_quorum(**options))

    def describe_configs(
        self, resources: Sequence[ConfigResource], **options: Any
    ) -> dict[ConfigResource, dict[str, ConfigEntry]]:
        return self._loop.call(lambda admin: admin.describe_configs(resources, **options))

    def incremental_alter_configs(
        self, changes: Mapping[ConfigResource, Sequence[AlterConfigOp]], **options: Any
    ) -> dict[ConfigResource, KafkaError | None]:
        return self._loop.call(lambda admin: admin.incremental_alter_configs(changes, **options))

    def list_offsets(
        self, specs: Mapping[TopicPartition, int], **options: Any
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        return self._loop.call(lambda admin: admin.list_offsets(specs, **options))

    def delete_records(
        self, before: Mapping[TopicPartition, int], **options: Any
    ) -> dict[TopicPartition, int]:
        return self._loop.call(lambda admin: admin.delete_records(before, **options))

    def elect_leaders(
        self, election: ElectionType, partitions: Iterable[TopicPartition] | None = None,
        **options: Any,
    ) -> dict[TopicPartition, KafkaError | None]:
        return self._loop.call(lambda admin: admin.elect_leaders(election, partitions, **options))

    def alter_partition_reassignments(
        self, reassignments: Mapping[TopicPartition, Sequence[int] | None], **options: Any
    ) -> dict[TopicPartition, KafkaError | None]:
        return self._loop.call(
            lambda admin: admin.alter_partition_reassignments(reassignments, **options)
        )

    def list_partition_reassignments(
        self, partitions: Iterable[TopicPartition] | None = None, **options: Any
    ) -> dict[TopicPartition, PartitionReassignment]:
        return self._loop.call(
            lambda admin: admin.list_partition_reassignments(partitions, **options)
        )

    def describe_log_dirs(
        self, broker_ids: Iterable[int] | None = None, **options: Any
    ) -> dict[int, dict[str, LogDirDescription]]:
        return self._loop.call(lambda admin: admin.describe_log_dirs(broker_ids, **options))

    def list_groups(self, **options: Any) -> list[GroupListing]:
        return self._loop.call(lambda admin: admin.list_groups(**options))

    def describe_groups(
        self, group_ids: Sequence[str], **options: Any
    ) -> dict[str, ConsumerGroupDescription]:
        return self._loop.call(lambda admin: admin.describe_groups(group_ids, **options))

    def delete_groups(self, group_ids: Sequence[str], **options: Any) -> dict[str, KafkaError | None]:
        return self._loop.call(lambda admin: admin.delete_groups(group_ids, **options))

    def list_group_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None = None, **options: Any
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        return self._loop.call(
            lambda admin: admin.list_group_offsets(group_id, partitions, **options)
        )

    def alter_group_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
        **options: Any,
    ) -> dict[TopicPartition, KafkaError | None]:
        return self._loop.call(lambda admin: admin.alter_group_offsets(group_id, offsets, **options))

    def delete_group_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition], **options: Any
    ) -> dict[TopicPartition, KafkaError | None]:
        tps = list(partitions)
        return self._loop.call(lambda admin: admin.delete_group_offsets(group_id, tps, **options))

    def close(self) -> None:
        self._loop.close()

    def __enter__(self) -> BlockingAdmin:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
