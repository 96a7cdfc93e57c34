"""AllocateProducerIds: blocks of producer ids that never overlap."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from quorum.controller.delta import fold_records
from quorum.controller.image import MetadataImage, Provenance
from quorum.controller.producer_ids_control import allocate_producer_ids
from quorum.controller.results import PRODUCER_ID_BLOCK_SIZE, ControllerContext
from quorum.wire.error_codes import Errors
from quorum.wire.messages.allocate_producer_ids import AllocateProducerIdsRequest
from quorum.wire.messages.metadata_records import ProducerIdsRecord
from quorum.wire.metadata_serde import decode_metadata_record, encode_metadata_record
from tests.unit.controller.cluster_world import CONFIG, Cluster


def _request(cluster: Cluster, broker_id: int) -> AllocateProducerIdsRequest:
    return AllocateProducerIdsRequest(
        broker_id=broker_id, broker_epoch=cluster.image.brokers[broker_id].epoch
    )


def test_blocks_start_at_zero_and_follow_each_other() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    first = cluster.apply(
        allocate_producer_ids(cluster.image, _request(cluster, 1), 0, cluster.ctx())
    )
    second = cluster.apply(
        allocate_producer_ids(cluster.image, _request(cluster, 2), 0, cluster.ctx())
    )
    assert (first.response.producer_id_start, first.response.producer_id_len) == (
        0, PRODUCER_ID_BLOCK_SIZE
    )
    assert second.response.producer_id_start == PRODUCER_ID_BLOCK_SIZE
    assert second.records == (
        ProducerIdsRecord(
            broker_id=2,
            broker_epoch=cluster.image.brokers[2].epoch,
            next_producer_id=2 * PRODUCER_ID_BLOCK_SIZE,
        ),
    )
    assert cluster.image.next_producer_id == 2 * PRODUCER_ID_BLOCK_SIZE


def test_allocation_for_a_stale_broker_epoch_is_rejected() -> None:
    cluster = Cluster()
    cluster.start(1)
    before = cluster.image
    request = AllocateProducerIdsRequest(
        broker_id=1, broker_epoch=cluster.image.brokers[1].epoch + 1
    )
    result = allocate_producer_ids(cluster.image, request, 0, cluster.ctx())
    assert result.response.error_code == Errors.STALE_BROKER_EPOCH
    cluster.rejected(result, before)


def test_allocation_for_an_unregistered_broker_is_rejected() -> None:
    cluster = Cluster()
    before = cluster.image
    request = AllocateProducerIdsRequest(broker_id=5, broker_epoch=0)
    result = allocate_producer_ids(cluster.image, request, 0, cluster.ctx())
    assert result.response.error_code == Errors.BROKER_ID_NOT_REGISTERED
    cluster.rejected(result, before)


_STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("allocate"), st.integers(min_value=1, max_value=3)),
        st.tuples(st.just("commit"), st.just(0)),
        st.tuples(st.just("failover"), st.just(0)),
    ),
    max_size=60,
)


@settings(max_examples=100, deadline=None)
@given(steps=_STEPS)
def test_producer_id_blocks_never_overlap_across_commits_and_failovers(
    steps: list[tuple[str, int]],
) -> None:
    """An active controller allocates on its working image; a commit replays the
    encoded records onto the committed image; a failover drops what was not
    committed (those answers were never sent). Sent blocks never overlap."""
    cluster = Cluster()
    cluster.start(1, 2, 3)
    committed: MetadataImage = cluster.image
    working = committed
    uncommitted: list[tuple[ProducerIdsRecord, range]] = []
    sent: list[range] = []
    for step, broker_id in steps:
        if step == "allocate":
            request = AllocateProducerIdsRequest(
                broker_id=broker_id, broker_epoch=working.brokers[broker_id].epoch
            )
            ctx = ControllerContext(
                config=CONFIG, now_ms=0, next_offset=working.provenance.offset,
                rng=random.Random(0),
            )
            result = allocate_producer_ids(working, request, 0, ctx)
            (record,) = result.records
            assert isinstance(record, ProducerIdsRecord)
            start = result.response.producer_id_start
            uncommitted.append((record, range(start, start + result.response.producer_id_len)))
            working = fold_records(
                working, [record], Provenance(working.provenance.offset + 1, 1)
            )
        elif step == "commit":
            replayed = [decode_metadata_record(encode_metadata_record(r)) for r, _ in uncommitted]
            committed = fold_records(
                committed, replayed, Provenance(committed.provenance.offset + len(replayed), 1)
            )
            sent.extend(block for _, block in uncommitted)
            uncommitted.clear()
            assert committed == working
        else:
            uncommitted.clear()
            working = committed
    ids = [pid for block in sent for pid in block]
    assert len(ids) == len(set(ids))
    assert all(pid >= 0 for pid in ids)
    assert committed.next_producer_id == len(ids)
