"""A controller node writes a snapshot of its image by the snapshot interval setting."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from quorum.controller.image import ConfigResourceType
from quorum.node import ControllerNode
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequestAlterableConfig,
    IncrementalAlterConfigsRequestAlterConfigsResource,
)

from .nodes import connect, start_nodes, wait_for_leader

DEADLINE_S = 10


async def _set_cluster_config(node: ControllerNode, value: str) -> None:
    """One ConfigRecord (a controller without brokers can write no topic)."""
    async with await connect(node) as conn:
        answer = await conn.request(IncrementalAlterConfigsRequest(resources=(
            IncrementalAlterConfigsRequestAlterConfigsResource(
                resource_type=ConfigResourceType.BROKER, resource_name="",
                configs=(IncrementalAlterConfigsRequestAlterableConfig(
                    name="log.retention.ms", config_operation=0, value=value
                ),),
            ),
        )))
    assert [r.error_code for r in answer.responses] == [Errors.NONE]


@pytest.mark.parametrize("interval_ms", ["1", "0"])
async def test_records_after_the_snapshot_interval_are_snapshotted_unless_it_is_zero(
    tmp_path: Path, interval_ms: str
) -> None:
    with trio.fail_after(DEADLINE_S):
        async with trio.open_nursery() as nursery:
            [node] = await start_nodes(
                nursery, tmp_path, 1,
                extra={"metadata.log.max.snapshot.interval.ms": interval_ms},
            )
            await wait_for_leader([node])
            await _set_cluster_config(node, "1000")
            # answered after commit and replay: the config record is in the image now
            log = node.driver.core.log
            if interval_ms == "0":
                # far below the 20 MiB between snapshots: no snapshot, by bytes or time
                assert log.snapshot_ids() == []
            else:
                created_end = node.driver.core.high_watermark
                assert created_end is not None
                # snapshots are stored beside the core: poll until one holds the record
                while not log.snapshot_ids() or log.snapshot_ids()[-1].offset < created_end:
                    await _set_cluster_config(node, str(int(trio.current_time() * 1000)))
                assert log.snapshot_ids()[-1].offset >= created_end
            node.stop()
