"""Differential tests against an independent codec: kafka-python's ``kafka.protocol``.

kafka-python generates its message classes from Kafka's JSON schemas (a newer
snapshot than ours), with its own encoder and decoder.  For every client API
both of us have, at every version both support, random messages from our
declarations go both ways, requests and responses alike:

* we encode, kafka-python decodes: the fields must match ours;
* kafka-python encodes (built from the same values), we decode: we must get
  the message back, and the bytes must equal our own encoding.

Fields are matched by name with underscores ignored (``KRaftVersionFeature``
is ``kraft_version_feature`` here and ``k_raft_version_feature`` there).
kafka-python's own conventions that the adapter undoes: a zero UUID decodes
to None; an absent tagged struct is None; authorized-operations int32 fields
are renamed ``authorized_operations`` and typed as a set of bit numbers.
"""

from __future__ import annotations

import functools
import uuid
from typing import Any, Final

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import quorum.wire.messages as ours
from quorum.wire.codec import decode, encode
from quorum.wire.schema import UUID, ArrayType, StructType, field_specs, message_info
from tests.unit.wire.strategies import message_strategy

# One strategy object per (class, version): Hypothesis validates a strategy on
# first use, and rebuilding the nested strategies for every example is slow.
_strategy = functools.cache(message_strategy)

kp_admin = pytest.importorskip("kafka.protocol.admin")
kp_consumer = pytest.importorskip("kafka.protocol.consumer")
kp_metadata = pytest.importorskip("kafka.protocol.metadata")
kp_producer = pytest.importorskip("kafka.protocol.producer")

ZERO_UUID: Final = uuid.UUID(int=0)
INT32_MIN: Final = -(2**31)

# (our class, kafka-python class) for every API both codecs have.  kafka-python
# has no KRaft RPCs (Vote, BeginQuorumEpoch, ...): those have golden vectors.
PAIRS: Final[list[tuple[type, Any]]] = [
    (ours.ApiVersionsRequest, kp_metadata.ApiVersionsRequest),
    (ours.ApiVersionsResponse, kp_metadata.ApiVersionsResponse),
    (ours.MetadataRequest, kp_metadata.MetadataRequest),
    (ours.MetadataResponse, kp_metadata.MetadataResponse),
    (ours.ProduceRequest, kp_producer.ProduceRequest),
    (ours.ProduceResponse, kp_producer.ProduceResponse),
    (ours.InitProducerIdRequest, kp_producer.InitProducerIdRequest),
    (ours.InitProducerIdResponse, kp_producer.InitProducerIdResponse),
    (ours.FetchRequest, kp_consumer.FetchRequest),
    (ours.FetchResponse, kp_consumer.FetchResponse),
    (ours.ListOffsetsRequest, kp_consumer.ListOffsetsRequest),
    (ours.ListOffsetsResponse, kp_consumer.ListOffsetsResponse),
    (ours.CreateTopicsRequest, kp_admin.CreateTopicsRequest),
    (ours.CreateTopicsResponse, kp_admin.CreateTopicsResponse),
    (ours.DeleteTopicsRequest, kp_admin.DeleteTopicsRequest),
    (ours.DeleteTopicsResponse, kp_admin.DeleteTopicsResponse),
    (ours.DescribeClusterRequest, kp_admin.DescribeClusterRequest),
    (ours.DescribeClusterResponse, kp_admin.DescribeClusterResponse),
    (ours.DescribeQuorumRequest, kp_admin.DescribeQuorumRequest),
    (ours.DescribeQuorumResponse, kp_admin.DescribeQuorumResponse),
    (ours.DescribeConfigsRequest, kp_admin.DescribeConfigsRequest),
    (ours.DescribeConfigsResponse, kp_admin.DescribeConfigsResponse),
    (ours.IncrementalAlterConfigsRequest, kp_admin.IncrementalAlterConfigsRequest),
    (ours.IncrementalAlterConfigsResponse, kp_admin.IncrementalAlterConfigsResponse),
    (ours.CreatePartitionsRequest, kp_admin.CreatePartitionsRequest),
    (ours.CreatePartitionsResponse, kp_admin.CreatePartitionsResponse),
    (ours.ElectLeadersRequest, kp_admin.ElectLeadersRequest),
    (ours.ElectLeadersResponse, kp_admin.ElectLeadersResponse),
    (ours.AlterPartitionReassignmentsRequest, kp_admin.AlterPartitionReassignmentsRequest),
    (ours.AlterPartitionReassignmentsResponse, kp_admin.AlterPartitionReassignmentsResponse),
    (ours.ListPartitionReassignmentsRequest, kp_admin.ListPartitionReassignmentsRequest),
    (ours.ListPartitionReassignmentsResponse, kp_admin.ListPartitionReassignmentsResponse),
    (ours.OffsetForLeaderEpochRequest, kp_consumer.OffsetForLeaderEpochRequest),
    (ours.OffsetForLeaderEpochResponse, kp_consumer.OffsetForLeaderEpochResponse),
    (ours.DeleteRecordsRequest, kp_admin.DeleteRecordsRequest),
    (ours.DeleteRecordsResponse, kp_admin.DeleteRecordsResponse),
    (ours.DescribeLogDirsRequest, kp_admin.DescribeLogDirsRequest),
    (ours.DescribeLogDirsResponse, kp_admin.DescribeLogDirsResponse),
    (ours.FindCoordinatorRequest, kp_metadata.FindCoordinatorRequest),
    (ours.FindCoordinatorResponse, kp_metadata.FindCoordinatorResponse),
    (ours.JoinGroupRequest, kp_consumer.JoinGroupRequest),
    (ours.JoinGroupResponse, kp_consumer.JoinGroupResponse),
    (ours.SyncGroupRequest, kp_consumer.SyncGroupRequest),
    (ours.SyncGroupResponse, kp_consumer.SyncGroupResponse),
    (ours.HeartbeatRequest, kp_consumer.HeartbeatRequest),
    (ours.HeartbeatResponse, kp_consumer.HeartbeatResponse),
    (ours.LeaveGroupRequest, kp_consumer.LeaveGroupRequest),
    (ours.LeaveGroupResponse, kp_consumer.LeaveGroupResponse),
    (ours.OffsetCommitRequest, kp_consumer.OffsetCommitRequest),
    (ours.OffsetCommitResponse, kp_consumer.OffsetCommitResponse),
    (ours.OffsetFetchRequest, kp_consumer.OffsetFetchRequest),
    (ours.OffsetFetchResponse, kp_consumer.OffsetFetchResponse),
    (ours.OffsetDeleteRequest, kp_consumer.OffsetDeleteRequest),
    (ours.OffsetDeleteResponse, kp_consumer.OffsetDeleteResponse),
    (ours.ListGroupsRequest, kp_admin.ListGroupsRequest),
    (ours.ListGroupsResponse, kp_admin.ListGroupsResponse),
    (ours.DescribeGroupsRequest, kp_admin.DescribeGroupsRequest),
    (ours.DescribeGroupsResponse, kp_admin.DescribeGroupsResponse),
    (ours.DeleteGroupsRequest, kp_admin.DeleteGroupsRequest),
    (ours.DeleteGroupsResponse, kp_admin.DeleteGroupsResponse),
]

# kafka-python renames these int32 fields (and types them as bit sets).
RENAMED: Final = {
    "clusterauthorizedoperations": "authorizedoperations",
    "topicauthorizedoperations": "authorizedoperations",
}


def _their_versions(their_cls: Any) -> tuple[int, int]:
    # valid_versions would report 0 as the minimum; the schema's is the truth.
    low, _, high = their_cls.json["validVersions"].partition("-")
    return int(low), int(high or low)


def _cases() -> list[Any]:
    cases = []
    for our_cls, their_cls in PAIRS:
        info = message_info(our_cls)
        low, high = _their_versions(their_cls)
        for version in range(max(info.low, low), min(info.high, high) + 1):
            cases.append(
                pytest.param(our_cls, their_cls, version, id=f"{our_cls.__name__}-v{version}")
            )
    return cases


CASES = _cases()


# -- adapter -------------------------------------------------------------------


def _norm(name: str) -> str:
    return name.replace("_", "").lower()


def _their_field(their_cls: Any, our_name: str) -> tuple[str, Any]:
    """(attribute name, field object) of kafka-python's field for one of ours."""
    fields = {_norm(name): (name, f) for name, f in their_cls._struct.fields.items()}
    key = _norm(our_name)
    found = fields.get(key) or fields.get(RENAMED.get(key, ""))
    assert found is not None, f"kafka-python's {their_cls.__name__} has no field {our_name}"
    return found


def _is_bitfield(their_field: Any) -> bool:
    return bool(their_field.type_str == "bitfield")


def _present(cls: type, version: int) -> list[tuple[str, Any, Any]]:
    return [(n, s, d) for n, s, d in field_specs(cls) if version in s.versions]


def ours_plain(value: Any, t: Any, version: int) -> Any:
    """Our value as plain data, keeping only the fields present at ``version``."""
    if value is None:
        return None
    if isinstance(t, StructType):
        return {
            _norm(name): ours_plain(getattr(value, name), spec.type, version)
            for name, spec, _ in _present(t.cls, version)
        }
    if isinstance(t, ArrayType):
        return [ours_plain(v, t.element, version) for v in value]
    if t.name in ("bytes", "records"):
        return bytes(value)
    return value


def _bits_to_int(bits: set[int] | None) -> int:
    if bits is None:
        return INT32_MIN
    value = sum(1 << b for b in bits)
    return value - 2**32 if value >= 2**31 else value


def _int_to_bits(value: int) -> set[int] | None:
    if value == INT32_MIN:
        return None
    return {b for b in range(32) if (value & 0xFFFFFFFF) >> b & 1}


def theirs_plain(obj: Any, their_cls: Any, our_cls: type, version: int) -> dict[str, Any]:
    """kafka-python's decoded object as plain data shaped like ``ours_plain``."""
    out = {}
    for name, spec, default in _present(our_cls, version):
        attr, f = _their_field(their_cls, name)
        value = getattr(obj, attr)
        if spec.tag is not None and value is None and version not in spec.nullable:
            value = default  # an absent tagged field
        out[_norm(name)] = _their_value(value, spec.type, f, version)
    return out


def _their_value(value: Any, t: Any, f: Any, version: int) -> Any:
    if _is_bitfield(f):
        return _bits_to_int(value)
    if isinstance(t, StructType):
        if attrs.has(type(value)):  # our default, standing in for an absent tag
            return ours_plain(value, t, version)
        return theirs_plain(value, f.data_class, t.cls, version)
    if value is None:
        return ZERO_UUID if t == UUID else None
    if isinstance(t, ArrayType):
        if isinstance(t.element, StructType):
            return [theirs_plain(v, f.data_class, t.element.cls, version) for v in value]
        return [_their_value(v, t.element, f, version) for v in value]
    if t.name in ("bytes", "records"):
        return bytes(value)
    return value


def build_theirs(their_cls: Any, msg: Any, version: int) -> Any:
    """A kafka-python object holding the same values as our ``msg``."""
    kwargs = {}
    for name, spec, default in _present(type(msg), version):
        value = getattr(msg, name)
        if spec.tag is not None and value == default:
            continue  # kafka-python writes every tagged field it is given
        attr, f = _their_field(their_cls, name)
        kwargs[attr] = _to_theirs(value, spec.type, f, version)
    return their_cls(version=version, **kwargs)


def _to_theirs(value: Any, t: Any, f: Any, version: int) -> Any:
    if _is_bitfield(f):
        return _int_to_bits(value)
    if value is None:
        return None
    if isinstance(t, StructType):
        return build_theirs(f.data_class, value, version)
    if isinstance(t, ArrayType):
        if isinstance(t.element, StructType):
            return [build_theirs(f.data_class, v, version) for v in value]
        return list(value)
    return value


def _comparable(msg: Any, version: int) -> Any:
    # kafka-python decodes an ApiVersions response with a non-zero error code as
    # v0 (KIP-511 fallback), so only error-free responses compare above v0.
    if isinstance(msg, ours.ApiVersionsResponse) and version > 0:
        return attrs.evolve(msg, error_code=0)
    return msg


# -- tests ---------------------------------------------------------------------


@pytest.mark.parametrize(("our_cls", "their_cls", "version"), CASES)
@settings(max_examples=10, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_kafka_python_reads_what_we_write_and_we_read_what_it_writes(
    our_cls: type, their_cls: Any, version: int, data: st.DataObject
) -> None:
    msg = _comparable(data.draw(_strategy(our_cls, version), label="message"), version)
    our_bytes = encode(msg, version)

    # Bytes first: when the layouts disagree, kafka-python decoding our bytes can
    # misread a length and run for minutes; comparing encodings fails at once.
    their_bytes = bytes(build_theirs(their_cls, msg, version).encode(version=version))
    assert their_bytes.hex() == our_bytes.hex()
    assert decode(our_cls, version, their_bytes) == msg

    theirs = their_cls.decode(our_bytes, version=version)
    assert theirs_plain(theirs, their_cls, our_cls, version) == ours_plain(
        msg, StructType(our_cls), version
    )


def test_every_shared_api_is_compared_at_some_version() -> None:
    compared = {case.values[0] for case in CASES}
    assert compared == {our_cls for our_cls, _ in PAIRS}
