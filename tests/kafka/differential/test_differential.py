"""The corpus against both clusters of the kafka layer, answer by answer.

Each (case, version) is one test: the same requests to Kafka and to pykraft, the answers
normalised (``tests.kafka.normalise_fields``) and compared (``compare``). A difference
that ``known.KNOWN`` does not name fails; one it names makes the test an expected failure
naming it; a known difference no case meets any more fails
``test_every_known_difference_still_occurs``. The Raft RPCs go to a controller of each
cluster, only where they cannot move its quorum (``cases.RAFT_CASES``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from deploy import LocalCluster
from deploy.kafka_cluster import KafkaCluster
from quorum.wire.messages import ApiVersionsRequest

from .cases import CASES, prepare
from .corpus import Case, Result, Session, run_case
from .kafka_tables import KAFKA_BROKER_LISTENER, KAFKA_CONTROLLER_LISTENER
from .known import KNOWN, explain

BY_ID: dict[str, tuple[Case, int]] = {
    f"{case.name}@v{version}": (case, version)
    for case in CASES for version in case.run_versions()
}
RESULTS: dict[str, Result] = {}


@pytest.fixture(scope="module")
def sessions(kafka: KafkaCluster, pykraft: LocalCluster) -> Iterator[tuple[Session, Session]]:
    kafka_side = Session(
        "kafka", {n: kafka.address(n) for n in kafka.broker_ids},
        {n: kafka.controller_address(n) for n in kafka.controller_ids}, kafka.cluster_id)
    pykraft_side = Session(
        "pykraft", {n: pykraft.address(n) for n in pykraft.broker_ids},
        {n: pykraft.address(n) for n in pykraft.node_ids if n not in pykraft.broker_ids},
        pykraft.cluster_id)
    try:
        for side in (kafka_side, pykraft_side):
            prepare(side)
        yield kafka_side, pykraft_side
    finally:
        kafka_side.close()
        pykraft_side.close()


@pytest.mark.parametrize("case_id", list(BY_ID))
def test_case(case_id: str, sessions: tuple[Session, Session]) -> None:
    case, version = BY_ID[case_id]
    result = run_case(case, version, *sessions)
    RESULTS[case_id] = result
    unexplained = [d for d in result.differences if explain(case_id, d) is None]
    assert not unexplained, (
        f"{case_id} ({case.about or case.api_name}) differs:\n"
        + "\n".join(f"  {d}" for d in unexplained)
        + f"\nkafka:   {result.kafka}\npykraft: {result.pykraft}")
    known = sorted({k.name for d in result.differences if (k := explain(case_id, d))})
    if known:
        pytest.xfail("known difference: " + "; ".join(known))


def test_every_known_difference_still_occurs() -> None:
    """A known difference whose cases all ran and none met it was fixed: remove it."""
    stale = []
    for known in KNOWN:
        ids = [i for i in BY_ID if re.fullmatch(known.cases, i)]
        if not ids or not all(i in RESULTS for i in ids):
            continue  # its cases did not all run (a -k selection): nothing to judge
        met = any(known.matches(i, d) for i in ids for d in RESULTS[i].differences)
        if not met:
            stale.append(known.name)
    assert not stale, f"known differences that no longer occur (update known.py): {stale}"


def test_the_recorded_kafka_tables_are_what_kafka_advertises(
        sessions: tuple[Session, Session]) -> None:
    kafka_side, _ = sessions
    request = ApiVersionsRequest(client_software_name="pykraft-differential",
                                 client_software_version="1.0")
    broker = kafka_side.answer(kafka_side.any_broker, request, 3)
    controller = kafka_side.answer(kafka_side.any_controller, request, 3,
                                   listener="controller")
    for listener, answer, recorded in (("broker", broker, KAFKA_BROKER_LISTENER),
                                       ("controller", controller, KAFKA_CONTROLLER_LISTENER)):
        live = {a.api_key: (a.min_version, a.max_version) for a in answer.api_keys}
        assert live == recorded, (
            f"Kafka's {listener} listener advertises another table than kafka_tables.py: "
            "record it again (python -m tests.kafka.differential.report --record-kafka)")
