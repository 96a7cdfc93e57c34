"""Metadata and DescribeCluster answers of the broker listener, from images (pure)."""

from __future__ import annotations

import uuid

from broker.api.metadata import ListenerView, describe_cluster_response, metadata_response
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    DescribeClusterRequest,
    MetadataRequest,
    MetadataRequestTopic,
)
from quorum.wire.messages.metadata_records import (
    BrokerRegistrationChangeRecord,
    RegisterBrokerRecord,
    RegisterBrokerRecordBrokerEndpoint,
)

from .records import change, fold, partition, register, topic, topic_id

VIEW = ListenerView(
    node_id=1, cluster_id="cluster", listener_name="PLAINTEXT", host="b1", port=9093, rack=None
)
# broker 3 is fenced; broker 4 has no PLAINTEXT listener
ONLY_EXTERNAL = RegisterBrokerRecord(
    broker_id=4, broker_epoch=3, incarnation_id=uuid.UUID(int=9), fenced=False,
    end_points=(
        RegisterBrokerRecordBrokerEndpoint(name="EXTERNAL", host="x4", port=1, security_protocol=0),
    ),
)
IMAGE = fold([
    register(1, 0), register(2, 1), register(3, 2, fenced=True), ONLY_EXTERNAL,
    topic("orders"),
    partition("orders", 0, [1, 2]),
    partition("orders", 1, [3, 2], isr=[3]),  # led by a fenced broker
    partition("orders", 2, [2, 1], isr=[2], leader=-1),
    partition("orders", 3, [4, 1], isr=[4]),  # led by a broker without this listener
    topic("audit"),
    partition("audit", 0, [2]),
])


def test_the_brokers_are_the_unfenced_ones_with_this_listener() -> None:
    answer = metadata_response(IMAGE, MetadataRequest(topics=None), 12, VIEW)
    brokers = [(b.node_id, b.host, b.port) for b in answer.brokers]
    assert brokers == [(1, "b1", 9093), (2, "b2", 9094)]
    assert (answer.cluster_id, answer.controller_id) == ("cluster", 1)


def test_partitions_without_a_live_leader_say_why_and_list_offline_replicas() -> None:
    answer = metadata_response(
        IMAGE, MetadataRequest(topics=(MetadataRequestTopic(name="orders"),)), 12, VIEW
    )
    [orders] = answer.topics
    assert (orders.error_code, orders.topic_id) == (Errors.NONE, topic_id("orders"))
    rows = [
        (p.partition_index, p.error_code, p.leader_id, p.offline_replicas)
        for p in orders.partitions
    ]
    assert rows == [
        (0, Errors.NONE, 1, ()),
        (1, Errors.LEADER_NOT_AVAILABLE, -1, (3,)),
        (2, Errors.LEADER_NOT_AVAILABLE, -1, ()),
        (3, Errors.LISTENER_NOT_FOUND, -1, (4,)),
    ]
    assert (orders.partitions[1].replica_nodes, orders.partitions[1].isr_nodes) == ((3, 2), (3,))


def test_an_empty_topic_list_means_all_topics_in_v0_and_none_later() -> None:
    everything = metadata_response(IMAGE, MetadataRequest(topics=()), 0, VIEW)
    assert [t.name for t in everything.topics] == ["audit", "orders"]
    nothing = metadata_response(IMAGE, MetadataRequest(topics=()), 1, VIEW)
    assert nothing.topics == ()
    also_all = metadata_response(IMAGE, MetadataRequest(topics=None), 1, VIEW)
    assert [t.name for t in also_all.topics] == ["audit", "orders"]


def test_unknown_topics_are_not_created_and_answered_by_name_or_by_id() -> None:
    missing_id = uuid.UUID(int=77)
    answer = metadata_response(
        IMAGE,
        MetadataRequest(topics=(
            MetadataRequestTopic(name="nope"),
            MetadataRequestTopic(name=None, topic_id=missing_id),
            MetadataRequestTopic(name=None, topic_id=topic_id("audit")),
            MetadataRequestTopic(name="nope"),
        )),
        12,
        VIEW,
    )
    assert [(t.name, t.error_code, t.topic_id) for t in answer.topics] == [
        ("nope", Errors.UNKNOWN_TOPIC_OR_PARTITION, uuid.UUID(int=0)),
        (None, Errors.UNKNOWN_TOPIC_ID, missing_id),
        ("audit", Errors.NONE, topic_id("audit")),
    ]


def test_the_broker_list_is_never_empty() -> None:
    lonely = fold([register(1, 0, fenced=True)])
    answer = metadata_response(lonely, MetadataRequest(topics=None), 12, VIEW)
    assert [(b.node_id, b.host, b.port) for b in answer.brokers] == [(1, "b1", 9093)]


def test_a_leader_change_shows_with_its_epoch() -> None:
    image = fold([change("orders", 2, leader=2)], IMAGE)
    answer = metadata_response(image, MetadataRequest(topics=None), 9, VIEW)
    orders = next(t for t in answer.topics if t.name == "orders")
    assert (orders.partitions[2].leader_id, orders.partitions[2].leader_epoch) == (2, 1)


def test_describe_cluster_lists_brokers_and_refuses_the_controller_endpoint_type() -> None:
    answer = describe_cluster_response(IMAGE, DescribeClusterRequest(endpoint_type=1), 1, VIEW)
    assert (answer.error_code, answer.endpoint_type, answer.controller_id) == (Errors.NONE, 1, 1)
    assert [b.broker_id for b in answer.brokers] == [1, 2]
    wrong = describe_cluster_response(IMAGE, DescribeClusterRequest(endpoint_type=2), 1, VIEW)
    assert wrong.error_code == Errors.MISMATCHED_ENDPOINT_TYPE and wrong.brokers == ()
    odd = describe_cluster_response(IMAGE, DescribeClusterRequest(endpoint_type=7), 1, VIEW)
    assert odd.error_code == Errors.UNSUPPORTED_ENDPOINT_TYPE


def test_a_broker_fenced_later_leaves_the_broker_list() -> None:
    image = fold([BrokerRegistrationChangeRecord(broker_id=2, broker_epoch=1, fenced=1)], IMAGE)
    answer = metadata_response(image, MetadataRequest(topics=None), 12, VIEW)
    assert [b.node_id for b in answer.brokers] == [1]
