"""The classic consumer-group coordinator, sans-I/O (Kafka's classic group protocol).

``GroupCoordinator`` takes decoded group requests, append outcomes,
partition loads and the clock, and returns ``CoordinatorOutput`` values
(answers, ``__consumer_offsets`` appends, the next deadline); a trio shell
moves the bytes.  ``offsets_partition_for`` is Kafka's group -> partition map.
"""

from broker.group.config import GroupCoordinatorConfig
from broker.group.coordinator import GroupCoordinator
from broker.group.errors import (
    GroupCoordinatorError,
    IllegalGroupTransitionError,
    RecordDecodeError,
)
from broker.group.output import Answer, Append, CoordinatorOutput
from broker.group.partitioning import java_string_hash, offsets_partition_for
from broker.group.records import CommittedOffset, OffsetsRecord

__all__ = [
    "Answer",
    "Append",
    "CommittedOffset",
    "CoordinatorOutput",
    "GroupCoordinator",
    "GroupCoordinatorConfig",
    "GroupCoordinatorError",
    "IllegalGroupTransitionError",
    "OffsetsRecord",
    "RecordDecodeError",
    "java_string_hash",
    "offsets_partition_for",
]
