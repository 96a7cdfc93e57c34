"""A controller and a broker in one nursery (real sockets): the broker finds itself the
coordinator of a group once ``__consumer_offsets`` exists, runs a join and a sync, keeps
committed offsets in its log and serves them again after a restart; clients may not
produce to the internal topic; idempotent producer ids come from controller blocks."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import trio

from broker import BrokerNode
from quorum.client import TrioKafkaConnection
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    CreateTopicsRequest,
    CreateTopicsRequestTopic,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    ProduceRequest,
    ProduceRequestPartition,
    ProduceRequestTopic,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
)
from quorum.wire.records import Record, build_batch

from ..node.nodes import wait_for_leader
from .test_broker_node import BROKER_ID, controller_and_broker_config

DEADLINE_S = 30
# one broker: one replica of the offsets topic, few partitions so it is created at once
GROUP_SETTINGS = {
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "3",
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
}


@contextlib.asynccontextmanager
async def broker_connection(node: BrokerNode) -> AsyncIterator[TrioKafkaConnection]:
    assert node.address is not None
    async with await TrioKafkaConnection.connect(node.address.host, node.address.port) as conn:
        yield conn


# what a client retries: the offsets topic is being created, or its new leader loads it
RETRIED = frozenset({
    Errors.COORDINATOR_NOT_AVAILABLE, Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.NOT_COORDINATOR,
})
RETRY_BACKOFF_S = 0.05  # a client's retry backoff; every test bounds its loops by DEADLINE_S


MAX_ASKS = int(DEADLINE_S / RETRY_BACKOFF_S)


async def asked_until_answered(conn: TrioKafkaConnection, request: Any, version: int) -> Any:
    """``request`` again, after a client's backoff, while it is answered with an error clients
    retry (at most ``MAX_ASKS`` times)."""
    for _ in range(MAX_ASKS):
        answer = await conn.request(request, version=version)
        if answer.error_code not in RETRIED:
            return answer
        await trio.sleep(RETRY_BACKOFF_S)
    raise AssertionError(f"{type(request).__name__} still answered {answer} after {MAX_ASKS} asks")


async def until_coordinator(conn: TrioKafkaConnection, group: str) -> Any:
    """FindCoordinator until it names a coordinator (the topic is created on first ask)."""
    answer = await asked_until_answered(
        conn, FindCoordinatorRequest(key=group, key_type=0), 3
    )
    assert answer.error_code == Errors.NONE, answer
    return answer


async def join_and_sync(conn: TrioKafkaConnection, group: str) -> tuple[str, int]:
    protocol = JoinGroupRequestProtocol(name="range", metadata=b"\x00\x00\x00\x00\x00\x01\x00\x01t\x00\x00\x00\x00")
    join = JoinGroupRequest(
        group_id=group, session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
        member_id="", protocol_type="consumer", protocols=(protocol,),
    )
    answer = await asked_until_answered(conn, join, 5)
    if answer.error_code == Errors.MEMBER_ID_REQUIRED:  # KIP-394: join again with the given id
        join = attrs.evolve(join, member_id=answer.member_id)
        answer = await asked_until_answered(conn, join, 5)
    assert answer.error_code == Errors.NONE, answer
    assert answer.leader == answer.member_id and answer.generation_id == 1
    synced = await conn.request(SyncGroupRequest(
        group_id=group, generation_id=answer.generation_id, member_id=answer.member_id,
        assignments=(SyncGroupRequestAssignment(member_id=answer.member_id, assignment=b"abc"),),
    ), version=3)
    assert synced.error_code == Errors.NONE and synced.assignment == b"abc", synced
    return answer.member_id, answer.generation_id


async def commit(conn: TrioKafkaConnection, group: str, member: str, generation: int,
                 offset: int) -> None:
    answer = await conn.request(OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=generation, member_id=member,
        topics=(OffsetCommitRequestTopic(name="t", partitions=(
            OffsetCommitRequestPartition(partition_index=0, committed_offset=offset),
        )),),
    ), version=5)
    assert answer.topics[0].partitions[0].error_code == Errors.NONE, answer


async def create_topic(conn: TrioKafkaConnection, name: str) -> None:
    """Through the broker, which answers once its own image holds the topic."""
    answer = await conn.request(CreateTopicsRequest(
        topics=(CreateTopicsRequestTopic(name=name, num_partitions=1, replication_factor=1),),
        timeout_ms=DEADLINE_S * 1000,
    ), version=5)
    assert [t.error_code for t in answer.topics] == [Errors.NONE], answer


async def committed(conn: TrioKafkaConnection, group: str) -> int:
    answer = await conn.request(OffsetFetchRequest(
        group_id=group, topics=(OffsetFetchRequestTopic(name="t", partition_indexes=(0,)),),
    ), version=5)
    assert answer.error_code == Errors.NONE, answer
    return int(answer.topics[0].partitions[0].committed_offset)


async def test_a_group_joins_syncs_and_its_commits_survive_a_broker_restart(
    tmp_path: Path,
) -> None:
    controller, config = controller_and_broker_config(tmp_path, extra=GROUP_SETTINGS)
    with trio.fail_after(DEADLINE_S):
        async with trio.open_nursery() as nursery:
            await nursery.start(controller.run)
            await wait_for_leader([controller])
            broker = BrokerNode.from_config(config, seed=2)
            async with trio.open_nursery() as brokers:
                await brokers.start(broker.run)
                async with broker_connection(broker) as conn:
                    found = await until_coordinator(conn, "g")
                    assert found.node_id == BROKER_ID
                    member, generation = await join_and_sync(conn, "g")
                    await create_topic(conn, "t")
                    await commit(conn, "g", member, generation, 42)
                    assert await committed(conn, "g") == 42
                    # a topic the cluster does not hold: refused, the known one committed
                    mixed = await conn.request(OffsetCommitRequest(
                        group_id="g", generation_id_or_member_epoch=generation,
                        member_id=member, topics=tuple(
                            OffsetCommitRequestTopic(name=name, partitions=(
                                OffsetCommitRequestPartition(partition_index=0,
                                                             committed_offset=43),))
                            for name in ("missing", "t")),
                    ), version=5)
                    codes = {t.name: t.partitions[0].error_code for t in mixed.topics}
                    assert codes == {"missing": Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                     "t": Errors.NONE}, mixed
                    assert await committed(conn, "g") == 43
                broker.stop()
            restarted = BrokerNode.from_config(config, seed=3)
            async with trio.open_nursery() as brokers:
                await brokers.start(restarted.run)
                async with broker_connection(restarted) as conn:
                    await until_coordinator(conn, "g")
                    # loaded from the log: the commit is there (retried while loading)
                    answer = await asked_until_answered(conn, OffsetFetchRequest(
                        group_id="g",
                        topics=(OffsetFetchRequestTopic(name="t", partition_indexes=(0,)),),
                    ), 5)
                    assert answer.error_code == Errors.NONE, answer
                    assert answer.topics[0].partitions[0].committed_offset == 43
                restarted.stop()
            controller.stop()


async def test_clients_may_not_produce_to_the_offsets_topic_and_producer_ids_are_unique(
    tmp_path: Path,
) -> None:
    controller, config = controller_and_broker_config(tmp_path, extra=GROUP_SETTINGS)
    with trio.fail_after(DEADLINE_S):
        async with trio.open_nursery() as nursery:
            await nursery.start(controller.run)
            await wait_for_leader([controller])
            broker = BrokerNode.from_config(config, seed=2)
            await nursery.start(broker.run)
            async with broker_connection(broker) as conn:
                await until_coordinator(conn, "g")
                batch = build_batch([Record(offset_delta=0, key=b"k", value=b"v")])
                answer = await conn.request(ProduceRequest(acks=-1, timeout_ms=5_000, topic_data=(
                    ProduceRequestTopic(name="__consumer_offsets", partition_data=(
                        ProduceRequestPartition(index=0, records=batch),
                    )),
                )), version=8)
                refused = answer.responses[0].partition_responses[0]
                assert refused.error_code == Errors.INVALID_TOPIC_EXCEPTION
                assert "internal topic" in (refused.error_message or "")
                ids = []
                for _ in range(3):
                    given = await conn.request(InitProducerIdRequest(
                        transactional_id=None, transaction_timeout_ms=60_000,
                    ), version=4)
                    assert given.error_code == Errors.NONE and given.producer_epoch == 0
                    ids.append(given.producer_id)
                assert len(set(ids)) == 3
                transactional = await conn.request(InitProducerIdRequest(
                    transactional_id="tx", transaction_timeout_ms=60_000,
                ), version=4)
                assert transactional.error_code == Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            broker.stop()
            controller.stop()
