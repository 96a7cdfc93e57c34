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


# a node program that says it is ready, then dies of an uncaught exception inside a group
_CRASHING = """
import sys
node_id = 1
print(f"pykraft node {node_id} ready: CONTROLLER://127.0.0.1:1", flush=True)
sys.stdin.read()  # the launcher's stdin is /dev/null: at once
def deep():
    raise ValueError("the reason the node died")
raise ExceptionGroup("a task failed", [RuntimeError("a sibling"), ValueError("inner")]) \\
    if "--group" in sys.argv else deep()
"""


@pytest.mark.parametrize("group", [False, True])
def test_a_wait_that_times_out_names_a_node_that_died_and_its_traceback_first(
    tmp_path: Path, group: bool,
) -> None:
    spec = ClusterSpec(controllers=2, ready_timeout_s=5.0,
                       command=(sys.executable, "-c", _CRASHING, *(["--group"] if group else [])))
    cluster = LocalCluster(tmp_path / "c", spec)
    cluster.prepare()
    try:
        cluster.start_node(1, wait=False)
        cluster.wait_for(lambda: not cluster.is_running(1), "node 1 to die", 5.0)
        with pytest.raises(LaunchError) as failure:
            cluster.wait_for(lambda: None, "something that never comes", 0.2)
        text = str(failure.value)
        head = text.splitlines()[1]
        assert head == "=== node 1 exited by itself with status 1", text
        # the traceback comes before the log tails, and its end names the error
        crash = text.index("Traceback" if not group else "Exception Group Traceback")
        assert crash < text.index("(last 30 lines)")
        assert ("ValueError: inner" if group else "the reason the node died") in text
        assert "node 2 exited" not in text  # never started: nothing to report
    finally:
        cluster.close()
