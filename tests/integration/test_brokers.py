"""Three controllers and three brokers as real processes: metadata follows faults.

Brokers register, are unfenced, and follow ``__cluster_metadata`` as
observers; the active controller places partitions, fences a killed broker
once its session expires and moves leadership to the ISR, unfences it when it
returns, and restores preferred leaders once the partition leaders take it
back into their ISRs (AlterPartition, sent here in the data plane's place).
Every node's image digest agrees at the same offset.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import trio

from deploy import LocalCluster
from quorum.client import BlockingKafkaConnection, ClientError
from quorum.config.values import HostPort
from quorum.controller_client import ControllerChannel
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    CreateTopicsRequest,
    CreateTopicsRequestTopic,
)
from quorum.wire.messages.pykraft_describe_image import (
    PykraftDescribeImageRequest,
    PykraftDescribeImageResponse,
)
from tests.integration.checks import StartCluster

_DEADLINE_S = 30.0


def describe_image(
    cluster: LocalCluster, node_id: int, *, include_image: bool = False
) -> PykraftDescribeImageResponse | None:
    try:
        conn = BlockingKafkaConnection.connect(*cluster.address(node_id), timeout=2.0)
    except (ClientError, OSError):
        return None
    try:
        answer: PykraftDescribeImageResponse = conn.request(
            PykraftDescribeImageRequest(include_image=include_image), timeout=2.0
        )
        return answer
    except (ClientError, OSError):
        return None
    finally:
        conn.close()


def active_image(cluster: LocalCluster) -> dict[str, Any]:
    """The committed image of the quorum leader (the active controller)."""
    def found() -> dict[str, Any] | None:
        answer = describe_image(cluster, cluster.leader(), include_image=True)
        if answer is None or answer.image_json is None:
            return None
        image: dict[str, Any] = json.loads(answer.image_json)
        return image

    return cluster.wait_for(found, "the active controller's image", _DEADLINE_S)


def create_topic(cluster: LocalCluster, name: str, partitions: int, factor: int) -> int:
    async def call() -> int:
        bootstrap = [HostPort(*cluster.address(n)) for n in cluster.node_ids]
        async with ControllerChannel(bootstrap) as channel:
            request = CreateTopicsRequest(
                topics=(CreateTopicsRequestTopic(
                    name=name, num_partitions=partitions, replication_factor=factor
                ),),
                timeout_ms=30_000,
            )
            response = await channel.call(request)
            code: int = response.topics[0].error_code
            return code

    return trio.run(call)


def partitions_of(image: dict[str, Any], topic: str) -> list[dict[str, Any]]:
    [entry] = [t for t in image["topics"] if t["name"] == topic]
    partitions: list[dict[str, Any]] = entry["partitions"]
    return partitions


def broker_states(image: dict[str, Any]) -> dict[int, bool]:
    """broker id -> fenced"""
    return {b["brokerId"]: b["fenced"] for b in image["brokers"]}


def digests_agree(cluster: LocalCluster) -> bool | None:
    answers = [describe_image(cluster, n) for n in cluster.node_ids + cluster.broker_ids]
    if any(a is None for a in answers):
        return None
    seen = {(a.offset, a.digest) for a in answers if a is not None}
    return True if len(seen) == 1 else None


def test_brokers_register_take_balanced_leadership_and_follow_a_broker_failure(
    start_cluster: StartCluster,
) -> None:
    cluster = start_cluster(controllers=3, brokers=3)
    brokers = cluster.broker_ids
    cluster.wait_for(
        lambda: broker_states(active_image(cluster)) == dict.fromkeys(brokers, False) or None,
        "three unfenced brokers", _DEADLINE_S,
    )
    # they fetch the metadata log as observers: DescribeQuorum (describe --replication) lists them

    def observers() -> list[int] | None:
        found = cluster.find_leader()
        ids = None if found is None else sorted(o.replica_id for o in found[1].observers)
        return ids if ids == brokers else None

    cluster.wait_for(observers, "the brokers listed as observers", _DEADLINE_S)

    # bad input first: more replicas than brokers writes nothing
    assert create_topic(cluster, "too-wide", 3, 4) == Errors.INVALID_REPLICATION_FACTOR
    assert create_topic(cluster, "bad/name", 1, 1) == Errors.INVALID_TOPIC_EXCEPTION
    assert create_topic(cluster, "orders", 30, 3) == Errors.NONE
    assert create_topic(cluster, "orders", 30, 3) == Errors.TOPIC_ALREADY_EXISTS

    image = active_image(cluster)
    assert [t["name"] for t in image["topics"]] == ["orders"]
    partitions = partitions_of(image, "orders")
    assert Counter(p["leader"] for p in partitions) == dict.fromkeys(brokers, 10)
    assert Counter(b for p in partitions for b in p["replicas"]) == dict.fromkeys(brokers, 30)
    assert all(sorted(p["isr"]) == sorted(p["replicas"]) for p in partitions)
    orders_configs = [c for c in image["configs"] if c["resourceName"] == "orders"]
    assert orders_configs[0]["configs"]["min.insync.replicas"] == "2"
    cluster.wait_for(lambda: digests_agree(cluster), "equal images on all six nodes", _DEADLINE_S)

    # kill -9 a broker: after its session it is fenced and loses leadership and ISR places
    victim = brokers[0]
    cluster.kill(victim)

    def fenced_and_moved() -> list[dict[str, Any]] | None:
        current = active_image(cluster)
        moved = partitions_of(current, "orders")
        if not broker_states(current)[victim]:
            return None
        if any(p["leader"] == victim or victim in p["isr"] for p in moved):
            return None
        return moved

    moved = cluster.wait_for(fenced_and_moved, f"broker {victim} fenced", _DEADLINE_S)
    assert all(p["leader"] in p["isr"] for p in moved)
    before = {p["partition"]: p for p in partitions}
    for p in moved:
        assert p["leaderEpoch"] >= before[p["partition"]]["leaderEpoch"]
        if before[p["partition"]]["leader"] == victim:
            assert p["leaderEpoch"] == before[p["partition"]]["leaderEpoch"] + 1

    # it returns under a new incarnation and is unfenced; its replica fetchers catch up
    # and the partition leaders take it back into their ISRs (AlterPartition): preferred
    # leaders are then restored
    cluster.start_node(victim)
    cluster.wait_for(
        lambda: not broker_states(active_image(cluster))[victim] or None,
        f"broker {victim} unfenced again", _DEADLINE_S,
    )
    cluster.wait_for(
        lambda: all(
            victim in p["isr"] for p in partitions_of(active_image(cluster), "orders")
        ) or None,
        f"broker {victim} back in every ISR", _DEADLINE_S,
    )

    def preferred_restored() -> bool | None:
        restored = partitions_of(active_image(cluster), "orders")
        leaders = Counter(p["leader"] for p in restored)
        return True if leaders == dict.fromkeys(brokers, 10) else None

    cluster.wait_for(preferred_restored, "preferred leaders restored", _DEADLINE_S)
    restored = partitions_of(active_image(cluster), "orders")
    assert all(p["leader"] == p["replicas"][0] for p in restored)
    cluster.wait_for(lambda: digests_agree(cluster), "equal images after the return", _DEADLINE_S)


def test_a_controller_failover_during_topic_creation_loses_and_duplicates_nothing(
    start_cluster: StartCluster,
) -> None:
    cluster = start_cluster(controllers=3, brokers=3)
    brokers = cluster.broker_ids
    cluster.wait_for(
        lambda: broker_states(active_image(cluster)) == dict.fromkeys(brokers, False) or None,
        "three unfenced brokers", _DEADLINE_S,
    )
    created = {}
    for i in range(6):
        created[f"t{i}"] = create_topic(cluster, f"t{i}", 3, 3)
    leader = cluster.leader()
    cluster.kill(leader)
    for i in range(6, 12):
        created[f"t{i}"] = create_topic(cluster, f"t{i}", 3, 3)
    cluster.start_node(leader)
    # a retried creation of an acknowledged topic says it exists; nothing is created twice
    assert create_topic(cluster, "t0", 3, 3) == Errors.TOPIC_ALREADY_EXISTS
    image = active_image(cluster)
    names = [t["name"] for t in image["topics"]]
    assert len(names) == len(set(names))
    for name, code in created.items():
        assert code == Errors.NONE, (name, Errors.from_code(code))
        assert name in names
        assert len(partitions_of(image, name)) == 3
    cluster.wait_for(lambda: digests_agree(cluster), "equal images after failover", _DEADLINE_S)
