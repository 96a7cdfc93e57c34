"""``kraft dev``: a local cluster (controllers and brokers) in the foreground, until Ctrl-C.

Starts N controller and M broker processes with the launcher (``deploy.LocalCluster``),
prints where each listens and how to look at the quorum, and keeps them
running until Ctrl-C or SIGTERM, then stops each in order (brokers first, by
controlled shutdown; a leader hands over first). The data stays in ``--data-dir``: the next run finds the
formatted directories and keeps the cluster id and the log. A node that
dies on its own (kill -9, to watch a failover) is reported with the tail of
its log and started again; one that keeps dying ends the run.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from types import FrameType

import click

from cli.console import fail
from deploy import ClusterSpec, LaunchError, LocalCluster

__all__ = ["dev", "produce_consume_lines"]

_WATCH_INTERVAL_S = 0.5
# a node exiting this often is not a fault being tried out but one that cannot run
_MAX_EXITS = 3
_EXIT_WINDOW_S = 60.0


def _interrupt_on_signals() -> None:
    """SIGTERM and SIGINT raise KeyboardInterrupt (the orderly stop below).

    SIGINT explicitly too: Python installs its own handler only when SIGINT
    is not ignored at start, and a shell starting a background job without
    job control ignores it, so Ctrl-C (or kill -INT) would then do nothing."""
    def handler(signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def _metrics(cluster: LocalCluster, node_id: int) -> str:
    host, port = cluster.metrics_address(node_id)
    return f"  metrics http://{host}:{port}/metrics"


def _banner(cluster: LocalCluster, leader: int) -> str:
    lines = [f"pykraft dev cluster {cluster.cluster_id}: {len(cluster.node_ids)} controller(s), "
             f"{len(cluster.broker_ids)} broker(s)"]
    for node_id in cluster.node_ids:
        host, port = cluster.address(node_id)
        role = "leader" if node_id == leader else "voter"
        lines.append(f"  controller {node_id} ({role}): CONTROLLER://{host}:{port}  "
                     f"pid {cluster.pid(node_id)}  log {cluster.layout[node_id].log_path}"
                     f"{_metrics(cluster, node_id)}")
    for node_id in cluster.broker_ids:
        host, port = cluster.address(node_id)
        lines.append(f"  broker {node_id}: PLAINTEXT://{host}:{port}  "
                     f"pid {cluster.pid(node_id)}  log {cluster.layout[node_id].log_path}"
                     f"{_metrics(cluster, node_id)}")
    lines += [
        "Look at the quorum with:",
        f"  kraft metadata-quorum --bootstrap-controller {cluster.bootstrap_controllers} "
        "describe --status",
        "Create and describe topics with:",
        f"  kraft topics --bootstrap-controller {cluster.bootstrap_controllers} --create "
        "--topic demo --partitions 6 --replication-factor "
        f"{max(1, min(3, len(cluster.broker_ids)))}",
        f"  kraft topics --bootstrap-controller {cluster.bootstrap_controllers} --describe",
    ]
    if cluster.broker_ids:
        host, port = cluster.address(cluster.broker_ids[0])
        lines.append(f"  kraft topics --bootstrap-server {host}:{port} --describe   "
                     "(through a broker, as Kafka clients do)")
        lines.append(f"  kraft metadata-quorum --bootstrap-server {host}:{port} "
                     "describe --replication   (brokers are listed as observers)")
        servers = ",".join(f"{h}:{p}" for h, p in map(cluster.address, cluster.broker_ids))
        lines += produce_consume_lines(servers) + group_lines(servers)
    lines += [
        "Press Ctrl-C to stop.",
    ]
    return "\n".join(lines)


def produce_consume_lines(servers: str) -> list[str]:
    """The banner's lines on the console tools, for the brokers at ``servers``."""
    return [
        "Produce (one record per line; key and value split by ':') and consume with:",
        f"  kraft console-producer --bootstrap-server {servers} --topic demo "
        "--property parse.key=true --property key.separator=:",
        f"  kraft console-consumer --bootstrap-server {servers} --topic demo --from-beginning "
        "--property print.key=true --property print.partition=true --property print.offset=true",
    ]


def group_lines(servers: str) -> list[str]:
    """The banner's lines on consumer groups, for the brokers at ``servers``."""
    return [
        "Consume in a group, and see its members, offsets and lag with:",
        f"  kraft console-consumer --bootstrap-server {servers} --topic demo --group demo-group "
        "--from-beginning",
        f"  kraft consumer-groups --bootstrap-server {servers} --describe --group demo-group",
    ]


def _watch(cluster: LocalCluster) -> None:
    """Until Ctrl-C. A node that exits on its own (a kill -9 to see a failover, say) is
    reported with the tail of its log and started again, as a supervisor would; one that
    exits ``_MAX_EXITS`` times within ``_EXIT_WINDOW_S`` cannot run and ends the run."""
    exits: dict[int, list[float]] = {}
    while True:
        for node_id in cluster.node_ids + cluster.broker_ids:
            if cluster.is_running(node_id):
                continue
            code = cluster.wait_exit(node_id)
            role = cluster.layout[node_id].role
            now = time.monotonic()
            recent = [t for t in exits.get(node_id, []) if now - t < _EXIT_WINDOW_S] + [now]
            exits[node_id] = recent
            report = f"{role} {node_id} exited with status {code}\n" + cluster.log_tail(node_id)
            if len(recent) >= _MAX_EXITS:
                raise LaunchError(report + f"\n{role} {node_id} keeps exiting: stopping")
            click.echo(report + f"\nstarting {role} {node_id} again", err=True)
            cluster.start_node(node_id, wait=False)
        time.sleep(_WATCH_INTERVAL_S)


@click.command(name="dev")
@click.option("--controllers", default=3, show_default=True, type=click.IntRange(1, 9),
              help="How many controllers (voters) to run.")
@click.option("--brokers", default=3, show_default=True, type=click.IntRange(0, 9),
              help="How many brokers to run (node ids after the controllers').")
@click.option("--data-dir", default="data/dev-cluster", show_default=True,
              type=click.Path(file_okay=False, path_type=Path),
              help="Where each controller keeps its config, log file and data.")
@click.option("--base-port", default=19091, show_default=True, type=click.IntRange(0, 65435),
              help="Node N listens on base-port + N - 1 (controllers first) and serves "
                   "metrics on base-port + 99 + N; 0 picks free ports.")
@click.option("--host", default="localhost", show_default=True,
              help="The address every controller listens on.")
@click.option("--test-profile", is_flag=True,
              help="Use the short test timeouts instead of Kafka's defaults.")
def dev(controllers: int, brokers: int, data_dir: Path, base_port: int, host: str,
        test_profile: bool) -> None:
    """Run a local cluster (controllers and brokers) in the foreground until Ctrl-C."""
    spec = ClusterSpec(controllers=controllers, brokers=brokers, host=host,
                       base_port=base_port or None, test_profile=test_profile, metrics=True)
    cluster = LocalCluster(data_dir, spec)
    _interrupt_on_signals()
    try:
        cluster.start()
        click.echo(_banner(cluster, cluster.leader()))
        _watch(cluster)
    except KeyboardInterrupt:
        click.echo("stopping the brokers and controllers ...")
        for node_id in cluster.broker_ids + cluster.node_ids:
            if cluster.is_running(node_id):
                cluster.stop(node_id)
        click.echo("stopped")
    except LaunchError as exc:
        fail(str(exc))
    finally:
        cluster.close()
