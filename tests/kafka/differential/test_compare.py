"""The comparison forgives what legitimately differs and reports every real difference.

Pairs of real answers (as pykraft's codec decodes them) are fed through the same
normalisation the corpus uses: what each cluster chooses for itself (ids, ports, times,
order) must not be reported; a wrong partition count, a wrong error code, a missing field
or element, a leader that is no broker must be.
"""

from __future__ import annotations

import uuid

import attrs

from quorum.wire.messages import (
    CreateTopicsResponse,
    CreateTopicsResponseConfig,
    CreateTopicsResponseTopic,
    DescribeQuorumResponse,
    DescribeQuorumResponsePartition,
    DescribeQuorumResponseReplicaState,
    DescribeQuorumResponseTopic,
    InitProducerIdResponse,
    JoinGroupResponse,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
    ProduceResponse,
    ProduceResponsePartition,
    ProduceResponseTopic,
)

from ..normalise_fields import RULES, Cluster, normalise
from .compare import differences
from .corpus import compare_case
from .known import KNOWN, explain
from .wire import Answered, Closed

KAFKA = Cluster(brokers=frozenset({4, 5, 6}), controllers=frozenset({1, 2, 3}))
PYKRAFT = Cluster(brokers=frozenset({4, 5, 6}), controllers=frozenset({1, 2, 3}))


def _metadata(*, partitions: int = 2, leaders: tuple[int, ...] = (4, 5), port: int = 9092,
              topic_id: uuid.UUID | None = None, error: int = 0,
              brokers: tuple[int, ...] = (4, 5, 6)) -> MetadataResponse:
    return MetadataResponse(
        throttle_time_ms=0,
        brokers=tuple(MetadataResponseBroker(node_id=b, host="127.0.0.1", port=port + b)
                      for b in brokers),
        cluster_id="kafka-cluster-id",
        controller_id=brokers[0],
        topics=(MetadataResponseTopic(
            error_code=error, name="t", topic_id=topic_id or uuid.uuid4(), partitions=tuple(
                MetadataResponsePartition(partition_index=i, leader_id=leaders[i % len(leaders)],
                                          leader_epoch=0, replica_nodes=(4, 5, 6),
                                          isr_nodes=(4, 5, 6))
                for i in range(partitions))),))


def _diff(kafka: object, pykraft: object) -> list[str]:
    return [str(d) for d in differences(normalise(kafka, KAFKA), normalise(pykraft, PYKRAFT))]


def test_every_rule_says_why_it_is_legitimate() -> None:
    assert RULES
    for rule in RULES:
        assert rule.name and rule.fields and len(rule.reason) > 30


def test_what_each_cluster_chooses_is_no_difference() -> None:
    kafka = _metadata()
    # other ports, topic id, cluster id, leaders, throttle, broker order
    pykraft = attrs.evolve(_metadata(leaders=(6, 4), port=40000, brokers=(6, 4, 5)),
                           cluster_id="another-id", throttle_time_ms=7)
    assert _diff(kafka, pykraft) == []


def test_a_wrong_partition_count_is_reported() -> None:
    found = _diff(_metadata(partitions=2), _metadata(partitions=3))
    assert "topics[0].partitions.len: kafka 2 != pykraft 3" in found


def test_a_wrong_error_code_is_reported() -> None:
    found = _diff(_metadata(error=0), _metadata(error=3))
    assert found == ["topics[0].error_code: kafka 0 != pykraft 3"]


def test_a_missing_field_value_is_reported() -> None:
    kafka = _metadata()
    pykraft = attrs.evolve(kafka, cluster_id=None)  # a null where Kafka sends the id
    assert _diff(kafka, pykraft) == ["cluster_id: kafka '<cluster-id>' != pykraft None"]


def test_a_missing_element_is_reported() -> None:
    kafka = _metadata()
    pykraft = attrs.evolve(kafka, brokers=kafka.brokers[:2])
    assert "brokers.len: kafka 3 != pykraft 2" in _diff(kafka, pykraft)


def test_a_leader_that_is_no_broker_is_reported() -> None:
    found = _diff(_metadata(leaders=(4, 5)), _metadata(leaders=(4, 2)))
    assert found == ["topics[0].partitions[1].leader_id: kafka '<broker>' != pykraft "
                     "'<controller>'"]
    assert _diff(_metadata(leaders=(4,)), _metadata(leaders=(-1,))) != []


def test_a_replica_count_is_kept() -> None:
    kafka = _metadata()
    topic = kafka.topics[0]
    shrunk = attrs.evolve(topic, partitions=(
        attrs.evolve(topic.partitions[0], isr_nodes=(4, 5)), *topic.partitions[1:]))
    found = _diff(kafka, attrs.evolve(kafka, topics=(shrunk,)))
    assert found == ["topics[0].partitions[0].isr_nodes.len: kafka 3 != pykraft 2"]


def test_offsets_are_compared_but_append_times_are_not() -> None:
    def produce(offset: int, time_ms: int) -> ProduceResponse:
        return ProduceResponse(responses=(ProduceResponseTopic(name="t", partition_responses=(
            ProduceResponsePartition(index=0, base_offset=offset, log_append_time_ms=time_ms,
                                     log_start_offset=0, error_message="x"),)),))

    assert _diff(produce(5, 1000), produce(5, 2000)) == []
    assert _diff(produce(5, -1), produce(5, 2000)) != []  # none against a time: reported
    assert _diff(produce(5, 1000), produce(6, 1000)) == [
        "responses[0].partition_responses[0].base_offset: kafka 5 != pykraft 6"]


def test_a_quorum_rule_applies_only_inside_the_quorum_answer() -> None:
    def quorum(end: int) -> DescribeQuorumResponse:
        return DescribeQuorumResponse(topics=(DescribeQuorumResponseTopic(
            topic_name="__cluster_metadata", partitions=(DescribeQuorumResponsePartition(
                leader_id=1, leader_epoch=end // 10, high_watermark=end, current_voters=(
                    DescribeQuorumResponseReplicaState(replica_id=1, log_end_offset=end),
                )),)),))

    assert _diff(quorum(100), quorum(71)) == []
    # a partition's leader epoch in a data answer is not forgiven
    kafka = _metadata()
    topic = kafka.topics[0]
    bumped = attrs.evolve(topic, partitions=(
        attrs.evolve(topic.partitions[0], leader_epoch=3), *topic.partitions[1:]))
    assert _diff(kafka, attrs.evolve(kafka, topics=(bumped,))) == [
        "topics[0].partitions[0].leader_epoch: kafka 0 != pykraft 3"]


def test_member_ids_keep_their_client_id() -> None:
    def join(member: str) -> JoinGroupResponse:
        return JoinGroupResponse(member_id=member, leader=member, generation_id=1)

    uid = "-0f0e0d0c-0b0a-4908-8706-050403020100"
    assert _diff(join("client" + uid), join("client" + uid.replace("0f", "aa"))) == []
    assert _diff(join("client" + uid), join("other" + uid)) != []


def test_an_answer_against_a_closed_connection_is_reported() -> None:
    result = compare_case("x@v0", (Closed(),), (Answered(_metadata()),), KAFKA, PYKRAFT)
    assert [d.path for d in result.differences] == ["[0]"]


def test_known_differences_are_named_narrowly() -> None:
    # a known difference covers its own cases and paths only
    result = compare_case("init-producer-id-transactional@v4",
                          (Answered(InitProducerIdResponse(error_code=0)),),
                          (Answered(InitProducerIdResponse(error_code=53)),), KAFKA, PYKRAFT)
    assert [explain(result.case_id, d) for d in result.differences] == [
        next(k for k in KNOWN if k.name == "transactions")]
    other = compare_case("init-producer-id@v4", (Answered(InitProducerIdResponse(error_code=0)),),
                         (Answered(InitProducerIdResponse(error_code=53)),), KAFKA, PYKRAFT)
    assert [explain(other.case_id, d) for d in other.differences] == [None]


def _created(rf: int, min_isr: str, source: int) -> CreateTopicsResponse:
    return CreateTopicsResponse(topics=(CreateTopicsResponseTopic(
        name="t", error_code=0, num_partitions=1, replication_factor=rf, configs=(
            CreateTopicsResponseConfig(name="min.insync.replicas", value=min_isr,
                                       config_source=source),
        )),))


def test_each_sides_default_min_isr_is_equal_but_a_wrong_one_is_reported() -> None:
    # Kafka's broker default 1 against pykraft's majority of RF 3, set on the topic
    assert _diff(_created(3, "1", 5), _created(3, "2", 1)) == []
    # pykraft answering 3 (all replicas) for RF 3 is not its default: reported
    assert "value" in " ".join(_diff(_created(3, "1", 5), _created(3, "3", 1)))
    # an explicitly set value is compared as it is
    assert _diff(_created(3, "3", 1), _created(3, "2", 1)) != []
