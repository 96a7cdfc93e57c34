"""The replica core's view of a broker's log directory: partition logs by topic id.

``quorum.log.log_dir.LogDirectory`` keeps Kafka's layout (``<topic>-<partition>``
directories, the checkpoint files, the clean-shutdown marker) and knows
partitions by name. The core knows them by topic id (``PartitionKey``): a topic
deleted and created again under the same name is another partition, whose log
must start empty. This adapter maps one onto the other.
"""

from __future__ import annotations

import shutil

from broker.replica_manager import PartitionKey
from quorum.log import ReplicatedLog
from quorum.log.log_dir import LogDirectory

__all__ = ["PartitionLogs"]


class PartitionLogs:
    def __init__(self, directory: LogDirectory) -> None:
        self.directory = directory
        self._names: dict[PartitionKey, tuple[str, int]] = {}

    def open_log(self, key: PartitionKey, topic: str, index: int) -> ReplicatedLog:
        self._names[key] = (topic, index)
        return self.directory.log(topic, index)

    def checkpointed_high_watermark(self, key: PartitionKey) -> int:
        name = self._names.get(key)
        return 0 if name is None else self.directory.high_watermarks.get(name, 0)

    def delete_log(self, key: PartitionKey) -> None:
        name = self._names.pop(key, None)
        if name is None:
            return
        log = self.directory.logs.pop(name, None)
        if log is not None:
            directory = log.directory
            log.abandon()
            shutil.rmtree(directory, ignore_errors=True)
