"""Partition replicas on a broker, as sans-I/O state machines (the data plane's core).

The seeds' replication design made safe by leader epochs (KIP-101/279), min
ISR and Kafka's maximal ISR while an ISR change is pending (KIP-497). One
``ReplicaCore`` per broker owns every hosted partition; the modules under it
each have one job:

* ``partition``: one replica's state (role, epochs, ISR state, high
  watermark, followers' progress) and the leader's rules;
* ``watermark`` and ``replica_state``: the high-watermark and caught-up
  arithmetic; ``isr``: the ISR states and their transition table;
  ``epochs``: the leader's end offset of an epoch (DivergingEpoch);
* ``append``: a produced batch checked, stamped and appended;
  ``producing``: Produce requests with acks 0, 1 and all;
  ``producer_state``: idempotent producers' epochs and last five batches,
  checked by the leader, updated by every replica's appends, rebuilt from
  producer snapshots and the log (``quorum.log.producer_snapshots``);
* ``leader_fetch`` and ``serving``: fetches served to followers and consumers,
  with long polls; ``session_cache``: incremental fetch sessions (serving side);
* ``follower``, ``fetcher`` and ``fetch_session``: following a leader, one
  fetcher per source broker with an incremental fetch session;
* ``alter_partition``: ISR changes queued for the controller;
  ``purgatory``: operations parked until a condition or a deadline.

Kafka's names where it has them: ``Partition`` is Kafka's ``Partition`` (one
replica's state, what a design note may call the partition state);
``ReplicaFetcher`` is the sans-I/O half of ``ReplicaFetcherThread`` (the
fetcher core per source broker); ``leader_fetch.read_for_follower`` is the
leader serving a follower's fetch.

Times are a monotonic ``now_ms``; a follower never caught up carries
``replica_state.NEVER_MS``, not 0, so a clock that starts near 0 does not
count it as caught up.

Driving contract (one thin trio task per broker owns the core, as
``quorum.node.driver`` owns a Raft core; other tasks talk to it through
memory channels):

* Inputs, each with the current ``now_ms`` and each returning one
  ``ReplicaOutput``: ``apply_changes(changed, removed, image)`` for every
  new metadata image (``broker.replica.manager.assignment_changes``, applied
  only once the broker has registered in this incarnation); ``produce`` and
  ``fetch`` for requests from the broker listener (the handle names the
  connection and correlation id); ``handle_fetch_response`` /
  ``fetch_failed`` for the core's own fetches; ``handle_alter_partition_response``
  / ``alter_partition_failed`` for its AlterPartition requests; ``poll`` at
  the output's ``next_deadline_ms``.
* The driver performs an output completely before the next input: it sends
  the fetch requests (version 12) to their source brokers and the
  AlterPartition request (version 3) to the active controller, and writes the
  produce and fetch answers; an acks=0 produce never gets one.
* The core calls the partition logs (``LogDirectory``, ``quorum.log``)
  synchronously inside a step; data logs are not fsynced per append (Kafka's
  durability is replication). The driver checkpoints ``high_watermarks()``
  periodically and passes the last checkpoint back through
  ``LogDirectory.checkpointed_high_watermark`` after a restart. When it
  stops, it calls ``snapshot_producer_states()`` before the logs close (as
  Kafka snapshots producer state at a clean shutdown: the next start reads
  the snapshot instead of the log since the last roll).
"""

from broker.replica.alter_partition import AlterPartitionQueue, IsrChangeResult
from broker.replica.append import AppendResult, append_to_leader, check_produced_batch
from broker.replica.config import ReplicaConfig, TopicConfig, topic_config
from broker.replica.core import LogDirectory, ReplicaCore
from broker.replica.errors import IllegalIsrTransitionError, ReplicaError
from broker.replica.fetch_session import FetchSessionHandler
from broker.replica.fetcher import FETCH_VERSION, ReplicaFetcher
from broker.replica.isr import CommittedIsr, IsrChange, PendingExpandIsr, PendingShrinkIsr
from broker.replica.output import (
    DeleteRecordsAnswer,
    FetchAnswer,
    OutboundAlterPartition,
    OutboundFetch,
    ProduceAnswer,
    ReplicaOutput,
)
from broker.replica.partition import AcceptedIsr, Partition
from broker.replica.purgatory import Purgatory
from broker.replica.session_cache import FetchSessionCache

__all__ = [
    "FETCH_VERSION",
    "AcceptedIsr",
    "AlterPartitionQueue",
    "AppendResult",
    "CommittedIsr",
    "DeleteRecordsAnswer",
    "FetchAnswer",
    "FetchSessionCache",
    "FetchSessionHandler",
    "IllegalIsrTransitionError",
    "IsrChange",
    "IsrChangeResult",
    "LogDirectory",
    "OutboundAlterPartition",
    "OutboundFetch",
    "Partition",
    "PendingExpandIsr",
    "PendingShrinkIsr",
    "ProduceAnswer",
    "Purgatory",
    "ReplicaConfig",
    "ReplicaCore",
    "ReplicaError",
    "ReplicaFetcher",
    "ReplicaOutput",
    "TopicConfig",
    "append_to_leader",
    "check_produced_batch",
    "topic_config",
]
