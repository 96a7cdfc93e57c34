"""Every topic config of Kafka 4.x: name, type, default, valid values, broker synonym.

Checked against apache/kafka's ``LogConfig`` (the topic ``ConfigDef``),
``ServerLogConfigs`` (defaults), ``ServerTopicConfigSynonyms`` (the broker
key that is each config's cluster default, the first synonym),
``CompressionType`` (codec levels) and ``ThrottledReplicaListValidator``.
Kafka 4.0 removed ``message.format.version`` and
``message.downconversion.enable``, so neither is here; the 37 below are the
non-internal names of Kafka 4.4.0's ``LogConfig.configDefCopy()`` (read from
the jar, with ``ServerTopicConfigSynonyms`` for their broker keys; 4.4 made
``message.timestamp.after.max.ms`` default to one hour).

A value is checked in Kafka's order: its type (``Not a number of type
LONG``), then its range or valid strings (Kafka's ``Range`` and
``ValidString`` / ``ValidList`` messages), and the answer is Kafka's
``ConfigException`` text ``Invalid value V for configuration K: reason``.

Then pykraft's own rule (``TopicConfigDef.unsupported``): a value asking for
a behaviour pykraft does not have is refused with the same shape and a
reason, never accepted and ignored: ``compression.type`` other than
``producer`` (pykraft stores batches as produced, it does not recompress),
``flush.messages`` / ``flush.ms`` other than their default (never: brokers
do not fsync data partitions on a schedule), ``preallocate=true``,
``remote.storage.enable=true`` (Kafka's own answer when tiered storage is
off in the broker), ``errors.deadletterqueue.group.enable=true`` (pykraft has
no share groups, whose dead-letter queue it marks), and a
``max.decompressed.message.bytes`` other than its default (pykraft bounds
every batch's decompression at 64 MiB server-wide and has no per-topic bound).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs

from quorum.config.schema import BOOLEAN, DOUBLE, INT, LONG, InvalidValue, csv_entries

__all__ = [
    "MIN_INSYNC_REPLICAS",
    "TOPIC_CONFIGS",
    "UNCLEAN_LEADER_ELECTION_ENABLE",
    "ConfigKind",
    "TopicConfigDef",
    "compaction_lag_problem",
    "parse_config_value",
    "value_problem",
]

MIN_INSYNC_REPLICAS: Final = "min.insync.replicas"
UNCLEAN_LEADER_ELECTION_ENABLE: Final = "unclean.leader.election.enable"

_LONG_MAX: Final = str(2**63 - 1)
_DAY_MS: Final = 24 * 60 * 60 * 1000


class ConfigKind(enum.IntEnum):
    """DescribeConfigs ConfigType codes (Kafka's ConfigDef.Type)."""

    BOOLEAN = 1
    STRING = 2
    INT = 3
    LONG = 5
    DOUBLE = 6
    LIST = 7


Check = Callable[[object], "str | None"]


@attrs.frozen(kw_only=True)
class TopicConfigDef:
    name: str
    kind: ConfigKind
    default: str
    # the broker config that is the cluster default (None: Kafka has no server default)
    broker_key: str | None
    doc: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    check: Check | None = None  # a validator of Kafka's other than a range or choices
    # pykraft's refusal of a valid value it cannot honour (a reason, or None)
    unsupported: Check | None = None

    @property
    def default_key(self) -> str:
        """The key a DEFAULT_CONFIG synonym is reported under."""
        return self.name if self.broker_key is None else self.broker_key


def _gzip_level(value: object) -> str | None:
    # CompressionType.GZIP.levelValidator: Deflater's 1..9, or -1 (its default)
    assert isinstance(value, int)
    if value == -1 or 1 <= value <= 9:
        return None
    return "Value must be between 1 and 9 or equal to -1"


_REPLICA = re.compile(r"([0-9]+:[0-9]+)?")


def _throttled_replicas(name: str) -> Check:
    def check(value: object) -> str | None:
        assert isinstance(value, list)
        if all(_REPLICA.fullmatch(e) for e in value) or "".join(value) == "*":
            return None
        return (
            f"{name} must be the literal '*' or a list of replicas in the following format: "
            "[partitionId]:[brokerId],[partitionId]:[brokerId],..."
        )

    return check


def _only_producer(value: object) -> str | None:
    if value == "producer":
        return None
    return (
        "pykraft stores record batches as the producer compressed them and does not "
        "recompress on append; only compression.type=producer is supported"
    )


def _no_scheduled_flush(value: object) -> str | None:
    if value == 2**63 - 1:
        return None
    return (
        "pykraft does not fsync data partitions by message count or time (durability comes "
        "from replication, as with Kafka's default); only the default is supported"
    )


def _no_preallocation(value: object) -> str | None:
    return "pykraft does not preallocate segment files" if value is True else None


def _no_remote_storage(value: object) -> str | None:
    if value is not True:
        return None
    return (
        "Tiered Storage functionality is disabled in the broker. "
        "Topic cannot be configured with remote log storage."
    )


def _no_share_groups(value: object) -> str | None:
    if value is not True:
        return None
    return "pykraft has no share groups (KIP-932), whose dead-letter queues this marks"


_MAX_DECOMPRESSED_DEFAULT: Final = 2_147_483_639


def _no_topic_decompression_bound(value: object) -> str | None:
    if value == _MAX_DECOMPRESSED_DEFAULT:
        return None
    return (
        "pykraft bounds the decompression of every batch at 64 MiB for the whole broker and "
        "has no per-topic bound; only the default is supported"
    )


def _def(
    name: str, kind: ConfigKind, default: str, broker_key: str | None, doc: str, **rest: Any
) -> TopicConfigDef:
    return TopicConfigDef(
        name=name, kind=kind, default=default, broker_key=broker_key, doc=doc, **rest
    )


_B, _S, _I, _L, _D, _LIST = (
    ConfigKind.BOOLEAN, ConfigKind.STRING, ConfigKind.INT, ConfigKind.LONG, ConfigKind.DOUBLE,
    ConfigKind.LIST,
)

_DEFS: Final = (
    _def("cleanup.policy", _LIST, "delete", "log.cleanup.policy",
         "How old segments are discarded: delete (retention) and/or compact (latest value per key).",
         choices=("compact", "delete")),
    _def("compression.type", _S, "producer", "compression.type",
         "Compression of stored batches; producer keeps the producer's codec.",
         choices=("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
         unsupported=_only_producer),
    _def("compression.gzip.level", _I, "-1", "compression.gzip.level",
         "The gzip level used when compression.type is gzip.", check=_gzip_level),
    _def("compression.lz4.level", _I, "9", "compression.lz4.level",
         "The lz4 level used when compression.type is lz4.", minimum=1, maximum=17),
    _def("compression.zstd.level", _I, "3", "compression.zstd.level",
         "The zstd level used when compression.type is zstd.", minimum=-131072, maximum=22),
    _def("delete.retention.ms", _L, str(_DAY_MS), "log.cleaner.delete.retention.ms",
         "How long a compacted topic keeps tombstones.", minimum=0),
    _def("errors.deadletterqueue.group.enable", _B, "false", None,
         "Whether share groups may use the topic as a dead-letter queue.",
         unsupported=_no_share_groups),
    _def("file.delete.delay.ms", _L, "60000", "log.segment.delete.delay.ms",
         "Time to wait before deleting a file from the file system.", minimum=0),
    _def("flush.messages", _L, _LONG_MAX, "log.flush.interval.messages",
         "Messages written between forced fsyncs of the log.", minimum=1,
         unsupported=_no_scheduled_flush),
    _def("flush.ms", _L, _LONG_MAX, "log.flush.interval.ms",
         "Time between forced fsyncs of the log.", minimum=0, unsupported=_no_scheduled_flush),
    _def("follower.replication.throttled.replicas", _LIST, "", None,
         "Replicas whose follower fetches are throttled (with a replication quota).",
         check=_throttled_replicas("follower.replication.throttled.replicas")),
    _def("index.interval.bytes", _I, "4096", "log.index.interval.bytes",
         "Bytes between two offset index entries.", minimum=0),
    _def("leader.replication.throttled.replicas", _LIST, "", None,
         "Replicas whose leader side is throttled (with a replication quota).",
         check=_throttled_replicas("leader.replication.throttled.replicas")),
    _def("local.retention.bytes", _L, "-2", "log.local.retention.bytes",
         "Local size limit with remote storage (-2: retention.bytes).", minimum=-2),
    _def("local.retention.ms", _L, "-2", "log.local.retention.ms",
         "Local age limit with remote storage (-2: retention.ms).", minimum=-2),
    _def("max.compaction.lag.ms", _L, _LONG_MAX, "log.cleaner.max.compaction.lag.ms",
         "Longest time a record stays uncompacted.", minimum=1),
    _def("max.decompressed.message.bytes", _I, str(_MAX_DECOMPRESSED_DEFAULT),
         "max.decompressed.message.bytes",
         "Largest decompressed size of a record batch, in bytes.", minimum=1,
         maximum=_MAX_DECOMPRESSED_DEFAULT, unsupported=_no_topic_decompression_bound),
    _def("max.message.bytes", _I, str(1024 * 1024 + 12), "message.max.bytes",
         "Largest record batch the topic accepts, in bytes.", minimum=0),
    _def("message.timestamp.after.max.ms", _L, "3600000",
         "log.message.timestamp.after.max.ms",
         "How far after the broker's clock a CreateTime timestamp may be.", minimum=0),
    _def("message.timestamp.before.max.ms", _L, _LONG_MAX, "log.message.timestamp.before.max.ms",
         "How far before the broker's clock a CreateTime timestamp may be.", minimum=0),
    _def("message.timestamp.type", _S, "CreateTime", "log.message.timestamp.type",
         "Whether record timestamps are the producer's or the broker's append time.",
         choices=("CreateTime", "LogAppendTime")),
    _def("min.cleanable.dirty.ratio", _D, "0.5", "log.cleaner.min.cleanable.ratio",
         "Dirty share of the log above which the cleaner compacts it.", minimum=0, maximum=1),
    _def("min.compaction.lag.ms", _L, "0", "log.cleaner.min.compaction.lag.ms",
         "Shortest time a record stays uncompacted.", minimum=0),
    _def(MIN_INSYNC_REPLICAS, _I, "1", MIN_INSYNC_REPLICAS,
         "ISR size below which acks=all produces fail with NOT_ENOUGH_REPLICAS.", minimum=1),
    _def("preallocate", _B, "false", "log.preallocate",
         "Whether new segment files are preallocated.", unsupported=_no_preallocation),
    _def("remote.copy.lag.bytes", _L, "-1", "log.remote.copy.lag.bytes",
         "With remote storage: bytes a segment may wait before it is copied (-1: none).",
         minimum=-1),
    _def("remote.copy.lag.ms", _L, "0", "log.remote.copy.lag.ms",
         "With remote storage: time a segment may wait before it is copied.", minimum=-1),
    _def("remote.log.copy.disable", _B, "false", None,
         "With remote storage: stop copying segments to it."),
    _def("remote.log.delete.on.disable", _B, "false", None,
         "With remote storage: delete remote data when it is turned off."),
    _def("remote.storage.enable", _B, "false", None,
         "Whether the topic uses tiered (remote) storage.", unsupported=_no_remote_storage),
    _def("retention.bytes", _L, "-1", "log.retention.bytes",
         "Partition size above which old segments are deleted (-1: no limit)."),
    _def("retention.ms", _L, str(7 * _DAY_MS), "log.retention.ms",
         "Age after which old segments are deleted (-1: no limit).", minimum=-1),
    _def("segment.bytes", _I, str(1024 * 1024 * 1024), "log.segment.bytes",
         "Size at which a new log segment is rolled, in bytes.", minimum=1024 * 1024),
    _def("segment.index.bytes", _I, str(10 * 1024 * 1024), "log.index.size.max.bytes",
         "Size of a segment's offset and time indexes.", minimum=4),
    _def("segment.jitter.ms", _L, "0", "log.roll.jitter.ms",
         "Largest random jitter subtracted from segment.ms.", minimum=0),
    _def("segment.ms", _L, str(7 * _DAY_MS), "log.roll.ms",
         "Age at which a new log segment is rolled.", minimum=1),
    _def(UNCLEAN_LEADER_ELECTION_ENABLE, _B, "false", UNCLEAN_LEADER_ELECTION_ENABLE,
         "Whether a replica outside the ISR may become leader (may lose data)."),
)

TOPIC_CONFIGS: Final[Mapping[str, TopicConfigDef]] = {d.name: d for d in _DEFS}

_PARSERS: Final[dict[ConfigKind, Callable[[str], object]]] = {
    ConfigKind.BOOLEAN: BOOLEAN,
    ConfigKind.INT: INT,
    ConfigKind.LONG: LONG,
    ConfigKind.DOUBLE: DOUBLE,
    ConfigKind.STRING: str,
    ConfigKind.LIST: csv_entries,
}


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _range_problem(definition: TopicConfigDef, value: object) -> str | None:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    if definition.minimum is not None and value < definition.minimum:
        return f"Value must be at least {_number(definition.minimum)}"
    if definition.maximum is not None and value > definition.maximum:
        return f"Value must be no more than {_number(definition.maximum)}"
    return None


def parse_config_value(definition: TopicConfigDef, text: str) -> object:
    """The typed value of ``text`` (trimmed, as Kafka's ConfigDef parses); raises
    InvalidValue. Trusted input (values the controller validated) never raises."""
    return _PARSERS[definition.kind](text.strip())


def value_problem(definition: TopicConfigDef, text: str) -> str | None:
    """Why ``text`` is not a valid value of the config (Kafka's reason, or pykraft's)."""
    try:
        value = parse_config_value(definition, text)
    except InvalidValue as exc:
        return str(exc)
    problem = _range_problem(definition, value)
    if problem is not None:
        return problem
    entries = value if isinstance(value, list) else [value]
    if definition.choices and any(e not in definition.choices for e in entries):
        return f"String must be one of: {', '.join(definition.choices)}"
    for check in (definition.check, definition.unsupported):
        problem = None if check is None else check(value)
        if problem is not None:
            return problem
    return None


def compaction_lag_problem(configs: Mapping[str, str]) -> str | None:
    """Kafka's ``LogConfig.validateValues``: min.compaction.lag.ms <= max.compaction.lag.ms
    (each from ``configs`` or its default)."""
    low = int(configs.get("min.compaction.lag.ms", "0").strip())
    high = int(configs.get("max.compaction.lag.ms", _LONG_MAX).strip())
    if low <= high:
        return None
    return (
        f"conflict topic config setting min.compaction.lag.ms ({low}) > "
        f"max.compaction.lag.ms ({high})"
    )
