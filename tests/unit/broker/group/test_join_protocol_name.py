"""A JoinGroup refusal names no protocol: null from v7, "" before (Kafka's JoinGroupResponse).

Found by the differential tests (tests/kafka/differential): Kafka 4.4 answers a JoinGroup
v7+ without a generation (MEMBER_ID_REQUIRED and the other refusals) with a null protocol
name (``JoinGroupResponse``'s constructor turns an empty one into null from v7); pykraft
sent "".
"""

from __future__ import annotations

from quorum.wire.error_codes import Errors
from quorum.wire.messages import JoinGroupResponse
from tests.unit.broker.group.harness import Harness, stable_group


def test_a_refusal_names_no_protocol_null_from_v7_and_empty_before() -> None:
    h = Harness()
    for version, expected in ((4, ""), (6, ""), (7, None), (9, None)):
        answer = h.answer(h.join("g", version=version))
        assert isinstance(answer, JoinGroupResponse)
        assert answer.error_code == Errors.MEMBER_ID_REQUIRED, version
        assert answer.protocol_name == expected, version
    unknown = h.answer(h.join("g", "ghost", version=9))
    assert unknown.error_code == Errors.UNKNOWN_MEMBER_ID and unknown.protocol_name is None


def test_a_generation_names_its_protocol_at_every_version() -> None:
    h = Harness()
    (member,), _ = stable_group(h, "g", 1)
    for version in (5, 7, 9):
        answer = h.answer(h.join("g", member, version=version))
        assert answer.error_code == Errors.NONE, answer
        assert answer.protocol_name == "range"
