"""A broker that starts from empty after the controllers' log start moved past 0
loads a snapshot (FetchSnapshot) instead of replaying the log.

Every node snapshots after 4 KiB of records and keeps only its latest
snapshot when its log cleaner runs (``metadata.max.retention.bytes=1``), so
once the controllers hold two snapshots their next cleaning moves the log
start up to the second. A broker formatted with the others but started only
then cannot fetch from offset 0: it must download the snapshot, and still be
unfenced and hold the controllers' image.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

from deploy import ClusterSpec, LocalCluster
from quorum.config import load_server_config
from quorum.controller.snapshot import read_snapshot_records
from quorum.node.settings import node_settings
from quorum.storage import METADATA_PARTITION_DIR
from quorum.wire.error_codes import Errors
from tests.integration.test_brokers import (
    active_image,
    broker_states,
    create_topic,
    describe_image,
)

_DEADLINE_S: Final = 20.0
# the cleaner may have run just before the second snapshot: two intervals at most
_CLEANER_BUDGET_S: Final = 15.0
_PROPERTIES: Final = {
    "metadata.log.max.record.bytes.between.snapshots": "4096",
    "metadata.max.retention.bytes": "1",
}
_CHECKPOINT = re.compile(r"(\d{20})-(\d{10})\.checkpoint")


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    """3 controllers and 3 brokers, formatted, none started; killed at teardown."""
    cluster = LocalCluster(tmp_path / "cluster",
                           ClusterSpec(controllers=3, brokers=3, properties=_PROPERTIES))
    try:
        cluster.prepare()
        yield cluster
    finally:
        cluster.close()
        # shown by pytest only when the test failed
        print(cluster.log_tails(40))


def partition_dir(cluster: LocalCluster, node_id: int) -> Path:
    return cluster.layout[node_id].metadata_dir / METADATA_PARTITION_DIR


def log_start(cluster: LocalCluster, node_id: int) -> int:
    path = partition_dir(cluster, node_id) / "log-start-offset-checkpoint"
    # Kafka's checkpoint text: version, row count, then the row
    lines = path.read_text().split() if path.exists() else []
    return int(lines[2]) if len(lines) == 3 else 0


def snapshot_offsets(cluster: LocalCluster, node_id: int) -> list[int]:
    names = (p.name for p in partition_dir(cluster, node_id).iterdir())
    return sorted(int(m[1]) for name in names if (m := _CHECKPOINT.fullmatch(name)))


def snapshot_ages_ms(cluster: LocalCluster, node_id: int) -> list[float]:
    """How long ago (wall clock) the last record of each snapshot was appended."""
    now_ms = time.time() * 1000
    ages = []
    for path in partition_dir(cluster, node_id).iterdir():
        if not _CHECKPOINT.fullmatch(path.name):
            continue
        try:
            header = read_snapshot_records(path.read_bytes())[0]
        except FileNotFoundError:
            continue  # the node's cleaner deleted it after the listing: it keeps running
        ages.append(now_ms - header.last_contained_log_timestamp)
    return ages


def segment_offsets(cluster: LocalCluster, node_id: int) -> list[int]:
    return sorted(int(p.stem) for p in partition_dir(cluster, node_id).glob("*.log"))


def cleaner_interval_s(cluster: LocalCluster) -> float:
    """How often a controller of this cluster applies metadata.max.retention.bytes."""
    config = load_server_config(cluster.layout[cluster.node_ids[0]].config_path)
    return node_settings(config, cluster.cluster_id).raft.log_cleaner_interval_ms / 1000


def same_image(cluster: LocalCluster, nodes: list[int]) -> tuple[int, str] | None:
    answers = [describe_image(cluster, n) for n in nodes]
    seen = {(a.offset, a.digest) for a in answers if a is not None}
    return seen.pop() if None not in answers and len(seen) == 1 else None


def test_a_fresh_broker_behind_the_log_start_loads_a_snapshot(cluster: LocalCluster) -> None:
    interval_s = cleaner_interval_s(cluster)
    # the test profile's metadata.log.cleaner.interval.ms; Kafka's 60 s would not fit
    assert 2 * interval_s <= _CLEANER_BUDGET_S
    *running, fresh = cluster.broker_ids
    for node_id in cluster.node_ids + running:
        cluster.start_node(node_id, wait=False)
    for node_id in cluster.node_ids + running:
        cluster.wait_ready(node_id)
    cluster.wait_for(
        lambda: broker_states(active_image(cluster)) == dict.fromkeys(running, False) or None,
        "the running brokers unfenced", _DEADLINE_S,
    )

    # topics until every controller's log start moved: the cleaner keeps only the
    # latest snapshot, so that happens within an interval of the second snapshot
    def log_start_moved() -> int | None:
        moved = min(log_start(cluster, n) for n in cluster.node_ids)
        if moved > 0:
            return moved
        name = f"t{len(active_image(cluster)['topics'])}"
        assert create_topic(cluster, name, 50, 2) == Errors.NONE
        return None

    moved = cluster.wait_for(
        log_start_moved, "the controllers' log start past offset 0", 2 * interval_s + _DEADLINE_S
    )
    assert fresh not in broker_states(active_image(cluster))
    # each snapshot is stamped with its last record's append time (metadata.max.retention.ms)
    ages = snapshot_ages_ms(cluster, cluster.node_ids[0])
    assert ages and all(0 <= age < 120_000 for age in ages), ages

    cluster.start_node(fresh)
    cluster.wait_for(lambda: broker_states(active_image(cluster)).get(fresh) is False or None,
                     f"broker {fresh} unfenced", _DEADLINE_S)
    offset, _digest = cluster.wait_for(
        lambda: same_image(cluster, [*cluster.node_ids, fresh]),
        f"broker {fresh} holding the controllers' image", _DEADLINE_S,
    )
    assert offset > moved

    # it never held a record below the snapshot it downloaded: its log begins there
    first_segment = segment_offsets(cluster, fresh)[0]
    assert first_segment >= moved > 0
    assert log_start(cluster, fresh) >= first_segment
    assert any(s >= first_segment for s in snapshot_offsets(cluster, fresh))
