"""One benchmark controller process: ``python -m bench.quorum_node CONFIG [options]``.

The same ``ControllerNode`` as ``kraft server-start`` (ready line on stdout,
SIGTERM for an orderly stop), plus two benchmark aids:

* ``--embedded-sequential N --embedded-commits M --in-flight K``: if this
  node is the first leader it learns of, it commits N single-record appends
  one after the other through the in-process writer
  (``append_and_wait_committed``), then M more with K writer tasks, and
  prints one ``BENCH {json}`` line with the latencies and the rate. Other
  nodes print nothing.
* ``--profile PATH``: cProfile of the trio thread, written on exit.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import time

import trio

from quorum.config import load_server_config
from quorum.node import ControllerNode, FsyncPlacement, Lifeline, NodeAddress, take_lifeline
from quorum.node.process import configure_logging, ready_line, serve_until_signalled

__all__ = ["main"]

PAYLOAD = b"v" * 100


async def _leads_first(node: ControllerNode) -> bool:
    """Whether this node is the first leader it learns of (then once it can commit).

    Only the first leader runs the workload: a node that takes over later, while
    the bench measures failovers, must not load the quorum with a second run.
    """
    await node.wait_started()
    while node.leader_id is None:
        await node.wait_changed()
    if node.leader_id != node.node_id:
        return False
    while not (node.is_leader and node.high_watermark):
        await node.wait_changed()
    return True


async def _sequential(node: ControllerNode, count: int) -> list[float]:
    latencies = []
    for _ in range(count):
        start = time.perf_counter()
        await node.append_and_wait_committed([PAYLOAD])
        latencies.append(time.perf_counter() - start)
    return latencies


async def _concurrent(node: ControllerNode, count: int, in_flight: int) -> float:
    left = count

    async def writer() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            await node.append_and_wait_committed([PAYLOAD])

    start = time.perf_counter()
    async with trio.open_nursery() as writers:
        for _ in range(in_flight):
            writers.start_soon(writer)
    return count / (time.perf_counter() - start)


async def _workload(node: ControllerNode, args: argparse.Namespace) -> None:
    if not await _leads_first(node):
        return
    await trio.sleep(0.5)  # followers connected and fetching
    latencies = await _sequential(node, args.embedded_sequential)
    rate = await _concurrent(node, args.embedded_commits, args.in_flight) if args.embedded_commits else 0.0
    print("BENCH " + json.dumps({"latencies_s": latencies, "commits_per_s": rate}), flush=True)


async def _run(node: ControllerNode, args: argparse.Namespace, lifeline: Lifeline | None) -> None:
    async with trio.open_nursery() as nursery:
        if args.embedded_sequential or args.embedded_commits:
            nursery.start_soon(_workload, node, args)

        def on_ready(address: NodeAddress) -> None:
            print(ready_line(node.node_id, address), flush=True)

        await serve_until_signalled(node, on_ready, lifeline=lifeline)
        nursery.cancel_scope.cancel()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config")
    parser.add_argument("--embedded-sequential", type=int, default=0)
    parser.add_argument("--embedded-commits", type=int, default=0)
    parser.add_argument("--in-flight", type=int, default=64)
    parser.add_argument("--profile", default=None)
    parser.add_argument("--log-level", default="WARNING")
    parser.add_argument("--fsync-direct", action="store_true",
                        help="every fsync on the trio thread, a leader's too")
    args = parser.parse_args()
    config = load_server_config(args.config)
    configure_logging(config.node_id, args.log_level)
    fsync = FsyncPlacement.INLINE if args.fsync_direct else FsyncPlacement.INLINE_WHEN_FOLLOWING
    node = ControllerNode.from_config(config, fsync=fsync)
    lifeline = take_lifeline()  # a bench killed mid-run must not leave its nodes running
    # CPU time, not wall time: on a shared machine, waiting for a core is not our cost
    profiler = cProfile.Profile(time.process_time) if args.profile else None
    if profiler is not None:
        profiler.enable()
    try:
        trio.run(_run, node, args, lifeline)
    finally:
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(args.profile)


if __name__ == "__main__":
    main()
