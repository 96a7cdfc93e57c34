"""The ``kraft`` command: Kafka's command-line tools for a pykraft cluster.

Each tool is a click group in its own module (``kraft storage`` is
``kafka-storage.sh``); this module only assembles them.
"""

from __future__ import annotations

import click

from cli.console_consumer import console_consumer
from cli.console_producer import console_producer
from cli.consumer_groups import consumer_groups
from cli.dev import dev
from cli.leader_election import leader_election
from cli.metadata_quorum import metadata_quorum
from cli.metadata_tools import dump_log, metadata_shell
from cli.reassign_partitions import reassign_partitions
from cli.server import server_start
from cli.storage import storage
from cli.topics import topics

__all__ = ["kraft", "main"]


@click.group(name="kraft", context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="pykraft", prog_name="kraft")
def kraft() -> None:
    """pykraft's command line: Kafka's tools for a pykraft cluster."""


kraft.add_command(storage)
kraft.add_command(server_start)
kraft.add_command(metadata_quorum)
kraft.add_command(dev)
kraft.add_command(dump_log)
kraft.add_command(metadata_shell)
kraft.add_command(topics)
kraft.add_command(reassign_partitions)
kraft.add_command(leader_election)
kraft.add_command(console_producer)
kraft.add_command(console_consumer)
kraft.add_command(consumer_groups)


def main() -> None:
    kraft(prog_name="kraft")
