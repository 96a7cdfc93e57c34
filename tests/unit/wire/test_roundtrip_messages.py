"""Every declared message survives encode/decode at every version it declares.

For each registered API (request and response) and each KRaft data schema, at
each version: ``decode(encode(m)) == m`` for random valid messages, and
re-encoding the decoded message gives the same bytes.  Also checks that the
registry and the listener version tables agree with the declarations.
"""

from __future__ import annotations

import functools
import random
import zlib
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import quorum.wire.messages as messages
from quorum.wire.apis import API_BY_KEY, CLIENT_LISTENER_VERSIONS, CONTROLLER_LISTENER_VERSIONS
from quorum.wire.codec import decode, encode
from quorum.wire.messages import metadata_records
from quorum.wire.schema import message_info
from tests.unit.wire.strategies import message_strategy, random_message

# One strategy object per (class, version): Hypothesis validates a strategy on
# first use, and rebuilding the nested strategies for every example is slow.
_strategy = functools.cache(message_strategy)

DATA_SCHEMAS = (
    messages.OffsetCommitKey,
    messages.OffsetCommitValue,
    messages.GroupMetadataKey,
    messages.GroupMetadataValue,
    messages.LeaderChangeMessage,
    messages.VotersRecord,
    messages.SnapshotHeaderRecord,
    messages.SnapshotFooterRecord,
    *(
        getattr(metadata_records, name)
        for name in metadata_records.__all__
        if name.endswith("Record")
    ),
)


def _pairs() -> list[Any]:
    pairs = []
    for spec in sorted(API_BY_KEY.values(), key=lambda s: s.key):
        for cls in (spec.request, spec.response):
            for version in range(spec.low, spec.high + 1):
                pairs.append(pytest.param(cls, version, id=f"{cls.__name__}-v{version}"))
    for cls in DATA_SCHEMAS:
        info = message_info(cls)
        for version in range(info.low, info.high + 1):
            pairs.append(pytest.param(cls, version, id=f"{cls.__name__}-v{version}"))
    return pairs


PAIRS = _pairs()


def _assert_round_trips(cls: type, version: int, message: Any) -> None:
    encoded = encode(message, version)
    decoded: Any = decode(cls, version, encoded)
    assert decoded == message
    assert encode(decoded, version) == encoded


# Hypothesis explores and shrinks; 10 examples per pair keep the ~190 pairs
# within seconds.  The seeded sweep below adds volume cheaply.
@pytest.mark.parametrize(("cls", "version"), PAIRS)
@settings(max_examples=10, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_random_message_round_trips_at_each_declared_version(
    cls: type, version: int, data: st.DataObject
) -> None:
    _assert_round_trips(cls, version, data.draw(_strategy(cls, version), label="message"))


@pytest.mark.parametrize(("cls", "version"), PAIRS)
def test_seeded_random_messages_round_trip_at_each_declared_version(
    cls: type, version: int
) -> None:
    # A fixed seed per pair: a failure names the pair and replays exactly.
    rng = random.Random(zlib.crc32(f"{cls.__name__}-{version}".encode()))
    for _ in range(25):
        _assert_round_trips(cls, version, random_message(cls, version, rng))


def test_every_api_key_in_the_spec_is_registered_once_with_matching_classes() -> None:
    expected = {0, 1, 2, 3, 18, 19, 20, 21, 22, 23, 32, 35, 37, 43, 44, 45, 46, 52, 53, 54, 55}
    expected |= {56, 59, 60}
    expected |= {62, 63, 64, 67, 10000, 10001}
    expected |= {8, 9, 10, 11, 12, 13, 14, 15, 16, 42, 47}  # the classic group APIs
    assert set(API_BY_KEY) == expected
    for key, spec in API_BY_KEY.items():
        for cls in (spec.request, spec.response):
            info = message_info(cls)
            assert info.api_key == key, cls.__name__
            assert (info.low, info.high) == (spec.low, spec.high), cls.__name__
        assert spec.request.__name__ == f"{spec.name}Request"
        assert spec.response.__name__ == f"{spec.name}Response"


@pytest.mark.parametrize(
    "table",
    [CLIENT_LISTENER_VERSIONS, CONTROLLER_LISTENER_VERSIONS],
    ids=["client", "controller"],
)
def test_a_listener_advertises_only_versions_we_decode(table: dict[int, tuple[int, int]]) -> None:
    for key, (low, high) in table.items():
        spec = API_BY_KEY[key]
        assert spec.low <= low <= high <= spec.high, f"{spec.name} {low}..{high}"


def test_the_client_listener_keeps_topic_id_fetch_versions_off() -> None:
    # Fetch v13+ addresses topics by id; the broker advertises it only once ids
    # work end to end, while KRaft peers on the controller listener need v17.
    assert CLIENT_LISTENER_VERSIONS[1] == (4, 12)
    assert CONTROLLER_LISTENER_VERSIONS[1][1] == 17


def test_produce_versions_with_old_message_formats_are_flagged() -> None:
    flagged = [v for v in range(0, 10) if messages.is_old_message_format(v)]
    assert flagged == [0, 1, 2]
    assert CLIENT_LISTENER_VERSIONS[0][0] in messages.OLD_MESSAGE_FORMAT_VERSIONS
