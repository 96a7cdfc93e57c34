"""GET /metrics on every node of a real cluster: the same image everywhere, one active
controller, running brokers, every node's loop measured, and an offline partition counted
once its only replica died."""

from __future__ import annotations

import math
from collections.abc import Callable

from deploy import LocalCluster
from deploy.probes import metrics_at
from quorum.wire.error_codes import Errors
from tests.integration.checks import StartCluster
from tests.integration.test_brokers import active_image, create_topic, partitions_of

_DEADLINE_S = 30.0
EVENT_COUNT = "kafka_controller_controllereventmanager_eventqueuetimems_count"
Samples = dict[str, float]


def scrape(cluster: LocalCluster, nodes: list[int]) -> dict[int, Samples] | None:
    found = {n: metrics_at(cluster.metrics_address(n), timeout=2.0) for n in nodes}
    if any(samples is None for samples in found.values()):
        return None
    return {n: s for n, s in found.items() if s is not None}


def digest_of(samples: Samples) -> str:
    [key] = [k for k in samples if k.startswith("pykraft_metadata_image_info")]
    return key.split('"')[1]


def until_all(cluster: LocalCluster, nodes: list[int], check: Callable[[dict[int, Samples]], bool],
              what: str) -> dict[int, Samples]:
    def found() -> dict[int, Samples] | None:
        scraped = scrape(cluster, nodes)
        return scraped if scraped is not None and check(scraped) else None

    return cluster.wait_for(found, what, _DEADLINE_S)


def same_image(scraped: dict[int, Samples]) -> bool:
    seen = {(s["pykraft_metadata_image_offset"], digest_of(s)) for s in scraped.values()}
    return len(seen) == 1


def test_every_node_exports_the_same_image_and_its_role_state(start_cluster: StartCluster) -> None:
    cluster = start_cluster(controllers=3, brokers=3, metrics=True)
    controllers, brokers = cluster.node_ids, cluster.broker_ids
    nodes = controllers + brokers
    until_all(cluster, brokers, lambda s: all(v["kafka_server_broker_state"] == 3
                                              for v in s.values()), "three running brokers")
    assert create_topic(cluster, "orders", 6, 3) == Errors.NONE
    assert create_topic(cluster, "lonely", 1, 1) == Errors.NONE

    scraped = until_all(
        cluster, nodes,
        lambda s: same_image(s) and all(v["kafka_controller_global_topic_count"] == 2
                                        for v in s.values()),
        "one image with both topics on every node",
    )
    for samples in scraped.values():
        assert samples["kafka_controller_global_partition_count"] == 7
        assert samples["kafka_controller_active_broker_count"] == 3
        assert samples["kafka_controller_fenced_broker_count"] == 0
        assert samples["kafka_controller_offline_partitions_count"] == 0
    active = [n for n in controllers
              if scraped[n]["kafka_controller_active_controller_count"] == 1]
    assert active == [cluster.leader()]
    assert all('kafka_raft_current_state{state="observer"}' in scraped[b]
               and scraped[b]['kafka_raft_current_state{state="observer"}'] == 1 for b in brokers)
    assert all(scraped[b]["kafka_server_broker_epoch"] >= 0 for b in brokers)
    assert all("kafka_server_broker_state" not in scraped[c] for c in controllers)
    for node, samples in scraped.items():  # every process runs its loop monitor
        for window in ("1m", "all"):
            stall = samples[f'pykraft_event_loop_max_stall_ms{{window="{window}"}}']
            assert math.isfinite(stall) and stall > 0, (node, window, stall)
        assert samples["pykraft_metadata_records_applied_total"] >= 0
    assert all(EVENT_COUNT in scraped[c] for c in controllers)
    assert all(EVENT_COUNT not in scraped[b] for b in brokers)

    # the only replica of "lonely" dies: once fenced, its partition is offline everywhere
    [only] = partitions_of(active_image(cluster), "lonely")
    victim = only["leader"]
    cluster.kill(victim)
    survivors = [n for n in nodes if n != victim]
    scraped = until_all(
        cluster, survivors,
        lambda s: same_image(s) and all(v["kafka_controller_offline_partitions_count"] == 1
                                        and v["kafka_controller_fenced_broker_count"] == 1
                                        for v in s.values()),
        f"broker {victim} fenced and one partition offline on every other node",
    )
    assert all(s["kafka_controller_active_broker_count"] == 2 for s in scraped.values())
