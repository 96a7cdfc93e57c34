"""Helpers of the kafka layer: Java drivers run from source, Metadata probes of either cluster."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Final

import attrs

from deploy.kafka import KafkaDistribution
from deploy.kafka.jvm import source_command
from deploy.probes import request_at
from deploy.waiting import wait_until
from quorum.client import ClientError
from quorum.wire.messages import MetadataRequest, MetadataRequestTopic

__all__ = ["HERE", "JavaRun", "Placement", "placements", "run_java", "wait_for_placements"]

HERE: Final = Path(__file__).resolve().parent
TOPIC_COMMAND: Final = "org.apache.kafka.tools.TopicCommand"


@attrs.frozen
class JavaRun:
    exit_code: int
    stdout: str
    stderr: str

    def explain(self) -> str:
        return f"exit {self.exit_code}\nstdout:\n{self.stdout}\nstderr (tail):\n" + \
            "\n".join(self.stderr.splitlines()[-40:])


def run_java(distribution: KafkaDistribution, log_config: Path, source: str,
             args: Sequence[str], *, timeout: float) -> JavaRun:
    """``java -cp 'LIBS/*' tests/kafka/SOURCE ARGS``: a single-file driver, no build step."""
    command = source_command(distribution, HERE / source, args, log_config=log_config)
    result = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True,
                            timeout=timeout, check=False)
    return JavaRun(result.returncode, result.stdout.decode(errors="replace"),
                   result.stderr.decode(errors="replace"))


@attrs.frozen
class Placement:
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


def placements(address: tuple[str, int], topic: str) -> dict[int, Placement] | None:
    """Partition -> placement of ``topic`` in the Metadata of the broker at ``address``;
    None while that broker does not know the topic (or does not answer)."""
    request = MetadataRequest(topics=(MetadataRequestTopic(name=topic),),
                              allow_auto_topic_creation=False)
    try:
        response = request_at(address, request)
    except (ClientError, OSError):
        return None
    found = [t for t in response.topics if t.name == topic and t.error_code == 0]
    if not found:
        return None
    return {p.partition_index: Placement(p.leader_id, tuple(p.replica_nodes), tuple(p.isr_nodes))
            for p in found[0].partitions if p.error_code == 0}


def wait_for_placements(addresses: Iterable[tuple[str, int]], topics: Mapping[str, int], *,
                        timeout: float = 30.0) -> None:
    """Until every broker at ``addresses`` knows each topic (name -> partition count) with
    a leader for every partition."""
    wanted = list(addresses)

    def known() -> bool:
        for address in wanted:
            for topic, partitions in topics.items():
                found = placements(address, topic)
                if found is None or len(found) != partitions or \
                        any(p.leader < 0 for p in found.values()):
                    return False
        return True

    wait_until(known, f"{sorted(topics)} with leaders in every broker's metadata", timeout)
