"""DescribeConfigs answered by a broker from its image and its own static settings."""

from __future__ import annotations

import pytest
import trio

from broker.api.configs import describe_configs_here
from quorum.controller.results import ControllerConfig
from quorum.controller.topic_configs import ConfigSource
from quorum.wire.error_codes import Errors
from quorum.wire.messages import DescribeConfigsRequest, DescribeConfigsRequestResource
from quorum.wire.messages.metadata_records import ConfigRecord
from tests.unit.controller.large_images import large_image

from ..records import fold, partition, register, topic

TOPIC, BROKER = 2, 4
IMAGE = fold([
    register(4, 0), register(5, 1),
    topic("orders"), partition("orders", 0, [4, 5]),
    ConfigRecord(resource_type=TOPIC, resource_name="orders", name="retention.ms", value="1000"),
    ConfigRecord(resource_type=BROKER, resource_name="", name="min.insync.replicas", value="2"),
])
# broker 4 was started with unclean.leader.election.enable=true in its server.properties
OWN = ControllerConfig(node_id=4, cluster_id="c", unclean_leader_election_enable=True)


def ask(*resources: tuple[int, str]) -> DescribeConfigsRequest:
    return DescribeConfigsRequest(
        resources=tuple(
            DescribeConfigsRequestResource(resource_type=kind, resource_name=name)
            for kind, name in resources
        ),
        include_synonyms=True,
    )


async def test_a_broker_describes_itself_with_its_static_settings() -> None:
    answer = await describe_configs_here(IMAGE, ask((BROKER, "4")), 4, OWN)
    (result,) = answer.results
    assert result.error_code == Errors.NONE
    configs = {c.name: c for c in result.configs}
    unclean = configs["unclean.leader.election.enable"]
    assert (unclean.value, unclean.config_source) == ("true", ConfigSource.STATIC_BROKER_CONFIG)
    assert [s.source for s in unclean.synonyms] == [
        ConfigSource.STATIC_BROKER_CONFIG, ConfigSource.DEFAULT_CONFIG,
    ]
    # the cluster-wide dynamic value wins over the default
    isr = configs["min.insync.replicas"]
    assert (isr.value, isr.config_source) == ("2", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)


async def test_another_brokers_id_is_refused_and_the_order_kept() -> None:
    answer = await describe_configs_here(
        IMAGE, ask((TOPIC, "orders"), (BROKER, "5"), (BROKER, ""), (TOPIC, "nope")), 4, OWN
    )
    assert [(r.resource_type, r.resource_name, r.error_code) for r in answer.results] == [
        (TOPIC, "orders", Errors.NONE),
        (BROKER, "5", Errors.INVALID_REQUEST),
        (BROKER, "", Errors.NONE),
        (TOPIC, "nope", Errors.UNKNOWN_TOPIC_OR_PARTITION),
    ]
    refused = answer.results[1]
    assert refused.error_message == "Unexpected broker id, expected 4 or empty string, but received 5"
    retention = {c.name: c for c in answer.results[0].configs}["retention.ms"]
    assert (retention.value, retention.config_source) == ("1000", ConfigSource.TOPIC_CONFIG)
    # the "" resource lists only what is set cluster-wide
    assert [c.name for c in answer.results[2].configs] == ["min.insync.replicas"]


async def test_a_request_for_3000_topics_is_answered_in_slices_with_checkpoints(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    image = large_image({f"t{i:04}": 1 for i in range(3000)}, brokers=4)
    checkpoints = 0
    checkpoint = trio.lowlevel.checkpoint

    async def counted() -> None:
        nonlocal checkpoints
        checkpoints += 1
        await checkpoint()

    monkeypatch.setattr(trio.lowlevel, "checkpoint", counted)
    answer = await describe_configs_here(
        image, ask(*((TOPIC, f"t{i:04}") for i in range(3000))), 4, OWN
    )
    # 11 units a topic resource (its own and its ten configs), 1,000 a slice
    assert checkpoints >= 3000 * 11 // 1000
    assert [r.resource_name for r in answer.results] == [f"t{i:04}" for i in range(3000)]
    assert all(r.error_code == Errors.NONE for r in answer.results)
    retention = {c.name: c.value for c in answer.results[42].configs}["retention.ms"]
    assert retention == "42"  # large_image gives topic number n retention.ms n
