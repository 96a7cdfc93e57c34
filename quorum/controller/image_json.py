"""JSON forms of metadata images and records, for tools and the PykraftDescribeImage API.

``image_to_json`` is pykraft's own layout (camelCase keys, Kafka's base64url
topic and incarnation ids, everything sorted as ``image_records`` sorts it).
``ImageJsonBuilder`` writes ``json.dumps(image_to_json(image))``, the same
text, a bounded number of partitions (brokers, config resources) at a time:
at 100,000 partitions the text is about 20 MB and half a second of work,
which a node does between serving fetches and heartbeats.
``metadata_record_json`` renders one record value the way Kafka's
``kafka-dump-log.sh --cluster-metadata-decoder`` does:
``{"type": "TOPIC_RECORD", "version": 0, "data": {...}}`` with the record's
fields in camelCase at the version it was written with.
"""

from __future__ import annotations

import base64
import itertools
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Final, TypeVar

from quorum.controller.image import (
    BrokerRegistration,
    ConfigResource,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
)
from quorum.controller.partition_map import items_in_order
from quorum.controller.slicing import build_at_once
from quorum.wire.metadata_serde import decode_metadata_record
from quorum.wire.primitives import decode_unsigned_varint
from quorum.wire.schema import ArrayType, Primitive, StructType, WireType, field_specs
from quorum.wire.uuids import uuid_to_str

__all__ = [
    "ImageJsonBuilder",
    "image_json_text",
    "image_to_json",
    "message_to_json",
    "metadata_record_json",
    "record_type_name",
]

_WORD_START: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
T = TypeVar("T")


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


def _topic_head_json(topic: TopicImage) -> dict[str, Any]:
    return {"name": topic.name, "topicId": uuid_to_str(topic.topic_id)}


def _topic_json(topic: TopicImage) -> dict[str, Any]:
    return {
        **_topic_head_json(topic),
        "partitions": [_partition_json(i, topic.partitions[i]) for i in sorted(topic.partitions)],
    }


def _config_json(resource: ConfigResource, values: Mapping[str, str]) -> dict[str, Any]:
    return {
        "resourceType": resource.type.name,
        "resourceName": resource.name,
        "configs": {key: values[key] for key in sorted(values)},
    }


def _image_head_json(image: MetadataImage) -> dict[str, Any]:
    return {
        "provenance": {"offset": image.provenance.offset, "epoch": image.provenance.epoch},
        "features": {name: image.features[name] for name in sorted(image.features)},
    }


def _sorted_topics(image: MetadataImage) -> list[TopicImage]:
    names = image.topic_ids_by_name
    return [image.topics_by_id[names[name]] for name in sorted(names)]


def _sorted_config_resources(image: MetadataImage) -> list[ConfigResource]:
    # ConfigResource's own order, by a key: sorting by its generated __lt__ is 20x slower
    return sorted(image.configs, key=lambda r: (r.type, r.name))


def image_to_json(image: MetadataImage) -> dict[str, Any]:
    """The whole image as plain JSON values (``json.dumps`` takes it as is)."""
    return {
        **_image_head_json(image),
        "brokers": [_broker_json(image.brokers[i]) for i in sorted(image.brokers)],
        "topics": [_topic_json(topic) for topic in _sorted_topics(image)],
        "configs": [
            _config_json(resource, image.configs[resource])
            for resource in _sorted_config_resources(image)
        ],
        "nextProducerId": image.next_producer_id,
    }


def image_json_text(image: MetadataImage) -> str:
    """``json.dumps(image_to_json(image))``, built by ``ImageJsonBuilder`` in one go."""
    return build_at_once(ImageJsonBuilder(image))


# json.dumps's separators (indent None, the default): the builder writes the text the way
# json.dumps does, and json.dumps itself writes every piece between them
_ITEM: Final = ", "
_KEY: Final = ": "


def _members(fields: dict[str, Any]) -> str:
    """An object's members as json.dumps writes them, without the braces."""
    return json.dumps(fields)[1:-1]


def _key(name: str) -> str:
    return json.dumps(name) + _KEY


class ImageJsonBuilder:
    """``json.dumps(image_to_json(image))`` written a slice at a time (the image is immutable).

    A unit is one broker, topic, partition or config resource; a large
    topic's partitions go in chunks of what is left of the slice.
    """

    def __init__(self, image: MetadataImage) -> None:
        self._image = image
        self._pieces: list[str] = []
        self._budget = 0
        self.units = 0  # done so far (tests)
        self._work = self._write()
        self._done = False

    def step(self, max_units: int) -> bool:
        """Write up to ``max_units`` units; True once the whole text is written."""
        self._budget = max_units
        try:
            while self._budget > 0 and not self._done:
                next(self._work)
        except StopIteration:
            self._done = True
        return self._done

    def result(self) -> str:
        assert self._done, "the JSON text is not complete yet"
        return "".join(self._pieces)

    def written(self) -> str:
        """The text written so far (tests)."""
        return "".join(self._pieces)

    def _spend(self, units: int) -> None:
        self._budget -= units
        self.units += units

    def _write(self) -> Iterator[None]:
        """Appends the text; yields after each piece (resumed only while the budget lasts)."""
        image, out = self._image, self._pieces
        out.append("{" + _members(_image_head_json(image)) + _ITEM + _key("brokers") + "[")
        self._spend(1)
        yield
        brokers = image.brokers
        yield from self._elements(sorted(brokers), lambda i: _broker_json(brokers[i]))
        out.append("]" + _ITEM + _key("topics") + "[")
        for n, topic in enumerate(_sorted_topics(image)):
            head = "{" + _members(_topic_head_json(topic)) + _ITEM + _key("partitions") + "["
            out.append(_ITEM + head if n else head)
            self._spend(1)
            yield
            yield from self._elements(
                items_in_order(topic.partitions), lambda item: _partition_json(*item)
            )
            out.append("]}")
        configs = image.configs
        out.append("]" + _ITEM + _key("configs") + "[")
        yield from self._elements(
            _sorted_config_resources(image), lambda r: _config_json(r, configs[r])
        )
        out.append("]" + _ITEM + _members({"nextProducerId": image.next_producer_id}) + "}")

    def _elements(self, items: Iterable[T], render: Callable[[T], Any]) -> Iterator[None]:
        """An array's elements, as many per piece as the budget allows (taken lazily)."""
        remaining = iter(items)
        first = True
        while chunk := list(itertools.islice(remaining, max(1, self._budget))):
            text = json.dumps([render(item) for item in chunk])[1:-1]
            self._pieces.append(text if first else _ITEM + text)
            first = False
            self._spend(len(chunk))
            yield
