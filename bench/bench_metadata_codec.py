"""Metadata record codec throughput: what every controller and broker pays per record replayed.

Run ``python -m bench.bench_metadata_codec [--runs 5] [--partitions 100000]``.
Workload, built the way the controller builds it: one topic of
``--partitions`` PartitionRecords over 6 active brokers at replication factor 3
(``partition_records``: replicas, ISR = the active replicas, leader the first,
epochs 0), then a PartitionChangeRecord for every tenth partition from
``build_partition_change`` taking broker 1 out of the ISR (an ISR change, plus a
new leader where broker 1 led), and a few RegisterBrokerRecord, TopicRecord and
ConfigRecord. Records travel as ``__cluster_metadata`` does: values of v2
batches of 1,000 records (``build_batch_from_values``), read back with
``iter_log_batches`` (CRC, record framing, metadata decode) and, in the last
row, folded into an image (``fold_records``: the replay every node runs).

Each figure is the median of ``--runs`` runs, the actions interleaved run by
run so that machine load hits them alike. Every action keeps what it makes
until it ends, as a replay does, and is timed twice: with the cyclic garbage
collector paused (the code's own cost, as ``timeit`` measures) and running
(what a node pays: the collector walks the whole heap as decoded records pile
up, so that column depends on what else the process holds).
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from quorum.controller.delta import fold_records
from quorum.controller.image import (
    EMPTY_IMAGE,
    BrokerEndpoint,
    BrokerRegistration,
    ConfigResourceType,
    MetadataImage,
    PartitionRegistration,
    Provenance,
)
from quorum.controller.log_records import iter_log_batches
from quorum.controller.partition_change import build_partition_change
from quorum.controller.replica_assignment import partition_records
from quorum.wire.messages.metadata_records import (
    ConfigRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    RegisterBrokerRecordBrokerEndpoint,
    TopicRecord,
)
from quorum.wire.metadata_serde import (
    MetadataRecord,
    decode_metadata_record,
    encode_metadata_record,
)
from quorum.wire.records import build_batch_from_values, decode_batch

__all__ = ["main"]

BROKERS = 6
REPLICATION_FACTOR = 3
RECORDS_PER_BATCH = 1000
LEAVING_BROKER = 1


def _image(broker_ids: Sequence[int]) -> MetadataImage:
    brokers = {
        b: BrokerRegistration(
            broker_id=b, epoch=b, incarnation_id=uuid.UUID(int=b),
            listeners=(BrokerEndpoint(name="PLAINTEXT", host="localhost", port=9092 + b,
                                      security_protocol=0),),
            fenced=False,
        )
        for b in broker_ids
    }
    return MetadataImage(provenance=Provenance(0, 0), brokers=brokers)


def make_workload(
    partitions: int, seed: int = 1
) -> tuple[list[PartitionRecord], list[PartitionChangeRecord], list[MetadataRecord]]:
    """(partition records, partition changes, a few other records) of one topic."""
    rng = random.Random(seed)
    broker_ids = list(range(1, BROKERS + 1))
    image = _image(broker_ids)
    topic_id = uuid.UUID(int=rng.getrandbits(128))
    assignments = [
        tuple(broker_ids[(p + i) % BROKERS] for i in range(REPLICATION_FACTOR))
        for p in range(partitions)
    ]
    created = partition_records(image, topic_id, 0, assignments)
    changes = []
    for record in created[::10]:
        partition = PartitionRegistration(
            replicas=record.replicas, isr=record.isr, leader=record.leader
        )
        change = build_partition_change(
            partition, topic_id=topic_id, partition_id=record.partition_id,
            acceptable=lambda r: r != LEAVING_BROKER,
            isr=[r for r in record.isr if r != LEAVING_BROKER],
        )
        if change is not None:
            changes.append(change)
    others: list[MetadataRecord] = [
        RegisterBrokerRecord(
            broker_id=b, incarnation_id=uuid.UUID(int=rng.getrandbits(128)), broker_epoch=b,
            end_points=(RegisterBrokerRecordBrokerEndpoint(
                name="PLAINTEXT", host="localhost", port=9092 + b, security_protocol=0),),
            rack=None, fenced=False,
        )
        for b in broker_ids
    ]
    others += [
        TopicRecord(name="bench", topic_id=topic_id),
        ConfigRecord(resource_type=ConfigResourceType.TOPIC, resource_name="bench",
                     name="cleanup.policy", value="delete"),
        ConfigRecord(resource_type=ConfigResourceType.TOPIC, resource_name="bench",
                     name="min.insync.replicas", value="2"),
    ]
    return created, changes, others


def _seconds(action: Callable[[], Any], collect: bool) -> float:
    gc.collect()
    if not collect:
        gc.disable()
    try:
        start = time.perf_counter()
        action()
        return time.perf_counter() - start
    finally:
        gc.enable()


def paired_medians(
    actions: Sequence[Callable[[], Any]], runs: int
) -> list[tuple[float, float]]:
    """Median seconds of each action (collector paused, running), interleaved run by run."""
    for action in actions:  # warm up: code generation, caches
        action()
    samples: list[list[tuple[float, float]]] = [[] for _ in actions]
    for _ in range(runs):
        for action, out in zip(actions, samples, strict=True):
            out.append((_seconds(action, False), _seconds(action, True)))
    return [
        (statistics.median(p for p, _ in s), statistics.median(r for _, r in s)) for s in samples
    ]


def log_batches(records: Sequence[MetadataRecord]) -> list[bytes]:
    values = [encode_metadata_record(r) for r in records]
    return [
        build_batch_from_values(
            values[start : start + RECORDS_PER_BATCH], base_offset=start, timestamp=1_700_000_000_000
        )
        for start in range(0, len(values), RECORDS_PER_BATCH)
    ]


def _read_log(batches: Sequence[bytes]) -> int:
    return sum(len(b.records) for data in batches for b in iter_log_batches(data))


def _replay_log(batches: Sequence[bytes]) -> MetadataImage:
    records = [r for data in batches for b in iter_log_batches(data) for _, r in b.records]
    return fold_records(EMPTY_IMAGE, records, Provenance(len(records), 1))


def _read_framing(batches: Sequence[bytes]) -> int:
    return sum(len(decode_batch(data).records) for data in batches)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--partitions", type=int, default=100_000)
    args = parser.parse_args(argv)
    created, changes, others = make_workload(args.partitions)
    log: list[MetadataRecord] = [*others[:-2], *created, *others[-2:], *changes]
    created_values = [encode_metadata_record(r) for r in created]
    change_values = [encode_metadata_record(r) for r in changes]
    batches = log_batches(log)
    assert [decode_metadata_record(v) for v in created_values] == created
    assert [decode_metadata_record(v) for v in change_values] == changes
    assert _read_log(batches) == len(log)

    rows: list[tuple[str, int, Callable[[], Any]]] = [
        ("encode PartitionRecord", len(created),
         lambda: [encode_metadata_record(r) for r in created]),
        ("decode PartitionRecord", len(created),
         lambda: [decode_metadata_record(v) for v in created_values]),
        ("encode PartitionChangeRecord", len(changes),
         lambda: [encode_metadata_record(r) for r in changes]),
        ("decode PartitionChangeRecord", len(changes),
         lambda: [decode_metadata_record(v) for v in change_values]),
        (f"batches of {RECORDS_PER_BATCH:,} -> records (framing only)", len(log),
         lambda: _read_framing(batches)),
        (f"batches of {RECORDS_PER_BATCH:,} -> metadata records", len(log),
         lambda: _read_log(batches)),
        (f"batches of {RECORDS_PER_BATCH:,} -> records -> image (replay)", len(log),
         lambda: _replay_log(batches)),
    ]
    times = paired_medians([action for _, _, action in rows], args.runs)
    size = sum(len(b) for b in batches)
    print(f"{len(created):,} PartitionRecords, {len(changes):,} PartitionChangeRecords, "
          f"{len(others)} others; {len(batches)} batches, {size:,} B; median of {args.runs} runs")
    print(f"{'':<48}{'GC paused':>22}{'GC running':>24}")
    print(f"{'operation':<48}{'us/record':>10}{'records/s':>12}{'us/record':>12}{'records/s':>12}")
    for (name, count, _), (paused, running) in zip(rows, times, strict=True):
        print(f"{name:<48}{paused / count * 1e6:>10.2f}{count / paused:>12,.0f}"
              f"{running / count * 1e6:>12.2f}{count / running:>12,.0f}")


if __name__ == "__main__":
    main()
