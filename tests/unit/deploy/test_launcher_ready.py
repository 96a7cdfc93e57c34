"""A node is ready when its own start said so, not when something answers on its port."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from deploy import ClusterSpec, LaunchError, LocalCluster

# a node program that starts, never binds its port and never says it is ready
_SILENT = "import time\nwhile True: time.sleep(1)\n"


def test_a_port_answered_by_another_process_does_not_make_a_node_ready(tmp_path: Path) -> None:
    holder = LocalCluster(tmp_path / "holder", ClusterSpec(controllers=1))
    holder.start()
    try:
        _, port = holder.address(1)
        spec = ClusterSpec(controllers=1, base_port=port, ready_timeout_s=1.5,
                           command=(sys.executable, "-c", _SILENT))
        late = LocalCluster(tmp_path / "late", spec)
        late.prepare()
        try:
            # the holder's node answers ApiVersions on that port; the late node said nothing
            with pytest.raises(LaunchError, match="node 1 to serve requests"):
                late.start_node(1)
            assert late.is_running(1)
        finally:
            late.close()
    finally:
        holder.close()
