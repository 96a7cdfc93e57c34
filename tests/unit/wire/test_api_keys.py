"""The ApiKey enum: Kafka's names and numbers, pykraft's private keys, and its use in the registry."""

from __future__ import annotations

import re
import warnings

import quorum.wire
import quorum.wire.messages  # registers every API
from quorum.wire import ApiKey
from quorum.wire.apis import API_BY_KEY, CLIENT_LISTENER_VERSIONS, CONTROLLER_LISTENER_VERSIONS
from quorum.wire.messages.pykraft_append import PYKRAFT_APPEND_KEY
from quorum.wire.messages.pykraft_describe_image import PYKRAFT_DESCRIBE_IMAGE_KEY
from quorum.wire.protocol import API_VERSIONS_KEY

with warnings.catch_warnings():
    # kafka-python 3.0.12 loads its schemas with a deprecated importlib.resources call
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.protocol.api_key import ApiKey as TheirApiKey


def upper_snake(camel: str) -> str:
    """``OffsetForLeaderEpoch`` -> ``OFFSET_FOR_LEADER_EPOCH`` (Kafka's ApiKeys spelling)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", camel).upper()


def test_the_enum_is_exported_by_the_wire_package() -> None:
    assert "ApiKey" in quorum.wire.__all__
    assert quorum.wire.ApiKey is ApiKey


def test_numbers_and_names_are_kafkas() -> None:
    assert (ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS, ApiKey.METADATA) == (0, 1, 2, 3)
    assert ApiKey.API_VERSIONS == 18 and ApiKey.OFFSET_FOR_LEADER_EPOCH == 23
    assert ApiKey.VOTE == 52 and ApiKey.ALLOCATE_PRODUCER_IDS == 67
    assert ApiKey(74) is ApiKey.LIST_CONFIG_RESOURCES
    assert ApiKey.LIST_CLIENT_METRICS_RESOURCES is ApiKey.LIST_CONFIG_RESOURCES


def test_every_key_kafka_python_knows_has_the_same_name_here() -> None:
    # kafka-python's enum is generated from a newer Kafka than pykraft's schema
    # snapshot, in CamelCase; each of its keys must be ours under Kafka's spelling
    theirs = {member.value: upper_snake(member.name) for member in TheirApiKey}
    assert len(theirs) > 90
    ours = {value: ApiKey(value).name for value in theirs}
    assert ours == theirs
    kafka_keys = {member.value for member in ApiKey if member.value < 10000}
    assert kafka_keys == set(range(max(kafka_keys) + 1)), "a gap in Kafka's keys"


def test_pykraft_private_keys_keep_their_numbers_and_names() -> None:
    assert ApiKey.PYKRAFT_APPEND == 10000 and ApiKey.PYKRAFT_DESCRIBE_IMAGE == 10001
    assert PYKRAFT_APPEND_KEY is ApiKey.PYKRAFT_APPEND
    assert PYKRAFT_DESCRIBE_IMAGE_KEY is ApiKey.PYKRAFT_DESCRIBE_IMAGE
    assert API_BY_KEY[ApiKey.PYKRAFT_APPEND].name == "PykraftAppend"
    assert API_BY_KEY[ApiKey.PYKRAFT_DESCRIBE_IMAGE].name == "PykraftDescribeImage"


def test_every_registered_api_is_keyed_by_the_member_named_like_it() -> None:
    assert API_BY_KEY
    for key, spec in API_BY_KEY.items():
        assert type(key) is ApiKey and spec.key is key, spec.name
        assert key.name == upper_snake(spec.name), spec.name


def test_the_listener_tables_and_the_header_constant_use_the_enum() -> None:
    for table in (CLIENT_LISTENER_VERSIONS, CONTROLLER_LISTENER_VERSIONS):
        assert all(type(key) is ApiKey for key in table)
    assert API_VERSIONS_KEY is ApiKey.API_VERSIONS


def test_a_table_keyed_by_the_enum_is_read_with_the_int_of_a_request_header() -> None:
    assert API_BY_KEY[3] is API_BY_KEY[ApiKey.METADATA]
    assert CLIENT_LISTENER_VERSIONS[1] == CLIENT_LISTENER_VERSIONS[ApiKey.FETCH]
