"""A topic's effective config on the broker: resolution, and changes through the image."""

from __future__ import annotations

import random
from collections.abc import Iterable

from broker.replica import ReplicaConfig, ReplicaCore
from broker.replica.config import topic_config
from broker.replica.manager import PartitionKey, assignment_changes
from quorum.controller.image import EMPTY_IMAGE, MetadataImage
from quorum.log import LogConfig, MemoryLog, ReplicatedLog
from quorum.wire.error_codes import Errors
from quorum.wire.messages import ProduceRequest, ProduceRequestPartition, ProduceRequestTopic
from quorum.wire.messages.metadata_records import ConfigRecord
from quorum.wire.records import build_batch_from_values

from ..records import fold, partition, register, topic

TOPIC, BROKER = 2, 4


def _config(
    name: str, value: str | None, *, kind: int = TOPIC, resource: str = "events"
) -> ConfigRecord:
    return ConfigRecord(resource_type=kind, resource_name=resource, name=name, value=value)


class Logs:
    """Memory logs, and every log config the core hands over."""

    def __init__(self) -> None:
        self.logs: dict[PartitionKey, MemoryLog] = {}
        self.configured: list[tuple[str, LogConfig, tuple[int, ...]]] = []

    def open_log(self, key: PartitionKey, name: tuple[str, int]) -> ReplicatedLog:
        return self.logs.setdefault(key, MemoryLog())

    def create_log(self, key: PartitionKey, name: tuple[str, int]) -> ReplicatedLog:
        return self.open_log(key, name)

    def checkpointed_high_watermark(self, key: PartitionKey) -> int:
        return 0

    def delete_log(self, key: PartitionKey) -> None:
        self.logs.pop(key, None)

    def configure_topic(self, topic: str, config: LogConfig, partitions: Iterable[int]) -> None:
        self.configured.append((topic, config, tuple(partitions)))


def test_a_topic_value_beats_the_brokers_dynamic_config_which_beats_its_static_one() -> None:
    defaults = ReplicaConfig(broker_id=1, data_log=LogConfig(retention_ms=5_000, segment_ms=77))
    plain = topic_config({}, defaults)
    assert (plain.log.retention_ms, plain.log.segment_ms) == (5_000, 77)
    assert plain.log.delete and not plain.log.compact and not plain.compacted
    dynamic = topic_config({}, defaults, {"log.retention.ms": "6000"})
    assert dynamic.log.retention_ms == 6_000
    own = topic_config(
        {"retention.ms": "7000", "cleanup.policy": "compact", "delete.retention.ms": "9",
         "min.cleanable.dirty.ratio": "0.25", "max.compaction.lag.ms": "50"},
        defaults, {"log.retention.ms": "6000"},
    )
    assert own.log.retention_ms == 7_000 and own.compacted
    assert (own.log.compact, own.log.delete) == (True, False)
    assert (own.log.delete_retention_ms, own.log.min_cleanable_dirty_ratio) == (9, 0.25)
    assert own.log.max_segment_ms == 50  # a compacted log rolls by max.compaction.lag.ms


def _image(*extra: ConfigRecord) -> MetadataImage:
    return fold([
        register(1, 10), register(2, 11), topic("events"),
        partition("events", 0, [1], isr=[1], leader=1),
        partition("events", 1, [1], isr=[1], leader=1),
        *extra,
    ])


def _produce(*keys: bytes | None) -> ProduceRequest:
    records = build_batch_from_values([b"v"] * len(keys), keys=list(keys))
    return ProduceRequest(acks=1, timeout_ms=1_000, topic_data=(ProduceRequestTopic(
        name="events", partition_data=(ProduceRequestPartition(index=0, records=records),)
    ),))


def _error(core: ReplicaCore, request: ProduceRequest, now_ms: int) -> int:
    (answer,) = core.produce("h", request, now_ms).produce_answers
    return answer.response.responses[0].partition_responses[0].error_code


def test_an_altered_topic_config_reaches_the_partitions_and_logs_with_the_next_image() -> None:
    logs = Logs()
    core = ReplicaCore(ReplicaConfig(broker_id=1), logs, random.Random(1), log_configs=logs)
    image = _image()
    changes = assignment_changes(EMPTY_IMAGE, image, 1)
    core.apply_changes(changes.changed, changes.removed, image, 0)
    (first,) = logs.configured
    assert first[0] == "events" and sorted(first[2]) == [0, 1] and not first[1].compact
    assert _error(core, _produce(None), 1) == Errors.NONE

    # only a config changes: no partition assignment moves, yet the next produce is
    # judged by the new policy and the logs get the new log config
    compacted = fold([_config("cleanup.policy", "compact"), _config("retention.ms", "60000")],
                     image)
    assert not assignment_changes(image, compacted, 1)
    core.apply_changes((), (), compacted, 2)
    assert _error(core, _produce(None), 3) == Errors.INVALID_RECORD
    assert _error(core, _produce(b"k"), 3) == Errors.NONE
    topic_name, log_config, partitions = logs.configured[-1]
    assert (topic_name, sorted(partitions)) == ("events", [0, 1])
    assert log_config.compact and log_config.retention_ms == 60_000

    # a cluster-wide dynamic broker config changes what the topic does not set itself
    dynamic = fold([_config("log.segment.bytes", "2097152", kind=BROKER, resource="")], compacted)
    core.apply_changes((), (), dynamic, 4)
    assert logs.configured[-1][1].segment_bytes == 2_097_152

    # an image whose configs did not change hands nothing over again
    count = len(logs.configured)
    unchanged = fold([register(3, 12)], dynamic)
    core.apply_changes((), (), unchanged, 5)
    assert len(logs.configured) == count


def test_a_lower_max_message_bytes_applies_to_the_next_produce() -> None:
    core = ReplicaCore(ReplicaConfig(broker_id=1), Logs(), random.Random(1))
    image = _image()
    changes = assignment_changes(EMPTY_IMAGE, image, 1)
    core.apply_changes(changes.changed, changes.removed, image, 0)
    assert _error(core, _produce(b"k"), 1) == Errors.NONE
    smaller = fold([_config("max.message.bytes", "10")], image)
    core.apply_changes((), (), smaller, 2)
    assert _error(core, _produce(b"k"), 3) == Errors.MESSAGE_TOO_LARGE
