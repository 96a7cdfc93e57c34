"""JSON forms of metadata images and records, for tools and the PykraftDescribeImage API.

``image_to_json`` is pykraft's own layout (camelCase keys, Kafka's base64url
topic and incarnation ids, everything sorted as ``image_records`` sorts it).
``metadata_record_json`` renders one record value the way Kafka's
``kafka-dump-log.sh --cluster-metadata-decoder`` does:
``{"type": "TOPIC_RECORD", "version": 0, "data": {...}}`` with the record's
fields in camelCase at the version it was written with.
"""

from __future__ import annotations

import base64
import re
from typing import Any, Final

from quorum.controller.image import (
    BrokerRegistration,
    ConfigResource,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
)
from quorum.wire.metadata_serde import decode_metadata_record
from quorum.wire.primitives import decode_unsigned_varint
from quorum.wire.schema import ArrayType, Primitive, StructType, WireType, field_specs
from quorum.wire.uuids import uuid_to_str

__all__ = [
    "image_to_json",
    "message_to_json",
    "metadata_record_json",
    "record_type_name",
]

_WORD_START: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _camel(name: str) -> str:
    head, *rest = name.rstrip("_").split("_")
    return head + "".join(word.capitalize() for word in rest)


def record_type_name(cls: type) -> str:
    """Kafka's MetadataRecordType name: ``PartitionChangeRecord`` -> ``PARTITION_CHANGE_RECORD``."""
    return _WORD_START.sub("_", cls.__name__).upper()


# -- messages and records -----------------------------------------------------------------


def _value_json(wire: WireType, value: Any, version: int) -> Any:
    if value is None:
        return None
    if isinstance(wire, ArrayType):
        return [_value_json(wire.element, item, version) for item in value]
    if isinstance(wire, StructType):
        return message_to_json(value, version)
    assert isinstance(wire, Primitive)
    if wire.name == "uuid":
        return uuid_to_str(value)
    if wire.name in ("bytes", "records"):
        return base64.b64encode(bytes(value)).decode("ascii")
    return value


def message_to_json(message: Any, version: int) -> dict[str, Any]:
    """The fields of a declared message or struct present at ``version``, camelCase keys."""
    return {
        _camel(name): _value_json(spec.type, getattr(message, name), version)
        for name, spec, _ in field_specs(type(message))
        if version in spec.versions
    }


def metadata_record_json(value: bytes | memoryview) -> dict[str, Any]:
    """One metadata record value as Kafka's dump tool shows it; raises WireDecodeError."""
    record = decode_metadata_record(value)
    _, pos = decode_unsigned_varint(value, 0)  # frame version
    _, pos = decode_unsigned_varint(value, pos)  # api key
    version, _ = decode_unsigned_varint(value, pos)
    return {
        "type": record_type_name(type(record)),
        "version": version,
        "data": message_to_json(record, version),
    }


# -- images -------------------------------------------------------------------------------


def _broker_json(broker: BrokerRegistration) -> dict[str, Any]:
    return {
        "brokerId": broker.broker_id,
        "epoch": broker.epoch,
        "incarnationId": uuid_to_str(broker.incarnation_id),
        "fenced": broker.fenced,
        "inControlledShutdown": broker.in_controlled_shutdown,
        "rack": broker.rack,
        "listeners": [
            {
                "name": e.name,
                "host": e.host,
                "port": e.port,
                "securityProtocol": e.security_protocol,
            }
            for e in broker.listeners
        ],
        "features": [
            {"name": f.name, "minVersion": f.min_version, "maxVersion": f.max_version}
            for f in broker.features
        ],
    }


def _partition_json(index: int, p: PartitionRegistration) -> dict[str, Any]:
    return {
        "partition": index,
        "leader": p.leader,
        "leaderEpoch": p.leader_epoch,
        "partitionEpoch": p.partition_epoch,
        "replicas": list(p.replicas),
        "isr": list(p.isr),
        "removingReplicas": list(p.removing_replicas),
        "addingReplicas": list(p.adding_replicas),
        "leaderRecoveryState": p.leader_recovery_state.name,
    }


def _topic_json(topic: TopicImage) -> dict[str, Any]:
    return {
        "name": topic.name,
        "topicId": uuid_to_str(topic.topic_id),
        "partitions": [_partition_json(i, topic.partitions[i]) for i in sorted(topic.partitions)],
    }


def _config_json(resource: ConfigResource, values: dict[str, str]) -> dict[str, Any]:
    return {
        "resourceType": resource.type.name,
        "resourceName": resource.name,
        "configs": {key: values[key] for key in sorted(values)},
    }


def image_to_json(image: MetadataImage) -> dict[str, Any]:
    """The whole image as plain JSON values (``json.dumps`` takes it as is)."""
    return {
        "provenance": {"offset": image.provenance.offset, "epoch": image.provenance.epoch},
        "features": {name: image.features[name] for name in sorted(image.features)},
        "brokers": [_broker_json(image.brokers[i]) for i in sorted(image.brokers)],
        "topics": [
            _topic_json(image.topics_by_id[image.topic_ids_by_name[name]])
            for name in sorted(image.topic_ids_by_name)
        ],
        "configs": [
            _config_json(resource, dict(image.configs[resource]))
            for resource in sorted(image.configs)
        ],
        "nextProducerId": image.next_producer_id,
    }
