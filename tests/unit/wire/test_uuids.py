"""Kafka's 22-character base64url text form of UUIDs."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from quorum.wire.errors import WireDecodeError
from quorum.wire.uuids import METADATA_TOPIC_ID, ZERO_UUID, random_uuid, uuid_from_str, uuid_to_str


@given(st.binary(min_size=16, max_size=16))
def test_text_form_round_trips(raw: bytes) -> None:
    value = uuid.UUID(bytes=raw)
    text = uuid_to_str(value)
    assert len(text) == 22
    assert uuid_from_str(text) == value


def test_the_metadata_topic_id_has_kafkas_text() -> None:
    assert uuid_to_str(METADATA_TOPIC_ID) == "AAAAAAAAAAAAAAAAAAAAAQ"


def test_kafkas_documented_non_canonical_cluster_id_is_accepted() -> None:
    assert uuid_from_str("MkU3OEVBNTcwNTJENDM2Qk").bytes[:4] == b"2E78"


@pytest.mark.parametrize(
    "text", ["", "abc", "MkU3OEVBNTcwNTJENDM2Q+", "MkU3OEVBNTcwNTJENDM2Q/", "MkU3OEVBNTcwNTJENDM2Q!", "A" * 23]
)
def test_malformed_text_is_refused(text: str) -> None:
    with pytest.raises(WireDecodeError):
        uuid_from_str(text)


def test_random_uuids_avoid_reserved_values() -> None:
    assert random_uuid(ZERO_UUID.bytes) not in (ZERO_UUID, METADATA_TOPIC_ID)
    assert random_uuid(METADATA_TOPIC_ID.bytes) not in (ZERO_UUID, METADATA_TOPIC_ID)
    dash = uuid.UUID(bytes=b"\xfb" + b"\x00" * 15)
    assert uuid_to_str(dash).startswith("-")
    assert not uuid_to_str(random_uuid(dash.bytes)).startswith("-")
