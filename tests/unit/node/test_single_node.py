"""One controller in-process on 127.0.0.1 (real sockets, real clock): it elects
itself, commits appends, answers bad input with Kafka's errors and survives
bad frames."""

from __future__ import annotations

import re
import socket
import struct
from pathlib import Path

import attrs
import pytest
import trio

from quorum.config import server_config_from_properties
from quorum.log import FileLog
from quorum.node import AppendError, ControllerNode, NodeStartupError, QuorumStateError
from quorum.raft import adapters
from quorum.raft.rpc import BeginEpochAsk, FetchAsk
from quorum.storage import (
    NotFormattedError,
    StorageError,
    read_meta_properties,
    write_meta_properties,
)
from quorum.wire.error_codes import Errors
from quorum.wire.messages import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest
from quorum.wire.messages.pykraft_append import PykraftAppendRequest
from quorum.wire.metadata_serde import unwrap_payload
from quorum.wire.protocol import RequestHeader, decode_response, encode_request
from quorum.wire.records import iter_batches

from .nodes import CLUSTER_ID, connect, controller_config, free_ports, start_nodes, wait_for_leader


async def read_all(stream: trio.SocketStream) -> bytes:
    """Everything until the node closes the connection."""
    data = b""
    while chunk := await stream.receive_some(65536):
        data += chunk
    return data


def committed_values(directory: Path) -> list[bytes]:
    """The PykraftAppend values in the log (the controller's own records left out)."""
    log = FileLog(directory)
    try:
        records = log.read(0, 1 << 30).records
        values = [
            unwrap_payload(r.value or b"")
            for batch in iter_batches(records)
            if not batch.header.is_control
            for r in batch.records
        ]
        return [v for v in values if v is not None]
    finally:
        log.close()


async def test_a_single_voter_elects_itself_and_commits_durably(tmp_path: Path) -> None:
    async with trio.open_nursery() as nursery:
        [node] = await start_nodes(nursery, tmp_path, 1)
        assert await wait_for_leader([node]) is node
        first = await node.append_and_wait_committed([b"a", b"b"])
        second = await node.append_and_wait_committed([b"c"])
        assert (first.last_offset - first.base_offset, second.base_offset) == (
            1, first.last_offset + 1
        )
        assert node.high_watermark is not None and node.high_watermark > second.last_offset
        with pytest.raises(ValueError, match="at least one record"):
            await node.append_and_wait_committed([])
        with pytest.raises(ValueError, match="over 1048576 bytes"):
            await node.append_and_wait_committed([b"x" * (1024 * 1024 + 1)])
        node.stop()
    assert committed_values(node.settings.metadata_partition_dir) == [b"a", b"b", b"c"]


async def test_a_network_append_is_answered_with_its_committed_offsets(tmp_path: Path) -> None:
    async with trio.open_nursery() as nursery:
        [node] = await start_nodes(nursery, tmp_path, 1)
        await wait_for_leader([node])
        async with await connect(node) as conn:
            answers = []
            async with trio.open_nursery() as writers:
                for i in range(10):
                    writers.start_soon(
                        lambda i=i: _append(conn, [f"r{i}".encode()], answers)
                    )
        assert all(a.error_code == 0 for a in answers)
        offsets = sorted(a.base_offset for a in answers)
        assert offsets == sorted(set(offsets)) and len(offsets) == 10
        assert node.high_watermark is not None and node.high_watermark > offsets[-1]
        node.stop()


async def _append(conn: object, records: list[bytes], answers: list[object]) -> None:
    answers.append(await conn.request(PykraftAppendRequest(records=tuple(records))))  # type: ignore[attr-defined]


async def test_a_restarted_node_keeps_its_epoch_and_its_committed_records(tmp_path: Path) -> None:
    async with trio.open_nursery() as nursery:
        [node] = await start_nodes(nursery, tmp_path, 1)
        await wait_for_leader([node])
        epoch = node.epoch
        await node.append_and_wait_committed([b"kept"])
        node.stop()
    again = ControllerNode(node.settings)
    async with trio.open_nursery() as nursery:
        await nursery.start(again.run)
        await wait_for_leader([again])
        assert again.epoch > epoch
        await again.append_and_wait_committed([b"more"])
        again.stop()
    assert committed_values(node.settings.metadata_partition_dir) == [b"kept", b"more"]


async def test_a_fetch_with_another_cluster_id_is_refused_as_inconsistent(tmp_path: Path) -> None:
    async with trio.open_nursery() as nursery:
        [node] = await start_nodes(nursery, tmp_path, 1)
        await wait_for_leader([node])
        ask = FetchAsk(
            cluster_id="another-cluster", replica_id=7, max_wait_ms=0, max_bytes=1024,
            current_leader_epoch=node.epoch, fetch_offset=0, last_fetched_epoch=0,
        )
        async with await connect(node) as conn:
            answer = await conn.request(adapters.fetch_request(ask))
        assert answer.error_code == Errors.INCONSISTENT_CLUSTER_ID
        node.stop()


async def test_a_stale_epoch_is_fenced(tmp_path: Path) -> None:
    async with trio.open_nursery() as nursery:
        [node] = await start_nodes(nursery, tmp_path, 1)
        await wait_for_leader([node])
        ask = BeginEpochAsk(cluster_id=CLUSTER_ID, voter_id=1, leader_id=2, leader_epoch=0)
        async with await connect(node) as conn:
            answer = await conn.request(adapters.begin_epoch_request(ask))
        partition = answer.topics[0].partitions[0]
        assert (partition.error_code, partition.leader_id) == (Errors.FENCED_LEADER_EPOCH, 1)
        assert node.is_leader
        node.stop()


@pytest.mark.parametrize(
    "frame",
    [
        struct.pack(">i", 5) + b"\x00\x12\x00\x03\x00",  # a header cut short
        struct.pack(">i", 2000) + b"\x00" * 16,  # over socket.request.max.bytes (1024)
        struct.pack(">i", -5),
        encode_request(RequestHeader(api_key=3, api_version=1, correlation_id=1),
                       MetadataRequest()),
    ],
    ids=["malformed", "oversized", "negative-size", "unserved-api"],
)
async def test_a_bad_frame_closes_only_its_connection(
    tmp_path: Path, frame: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    async with trio.open_nursery() as nursery:
        [node] = await start_nodes(
            nursery, tmp_path, 1, extra={"socket.request.max.bytes": "1024"}
        )
        assert node.address is not None
        async with await trio.open_tcp_stream("127.0.0.1", node.address.port) as bad:
            await bad.send_all(frame)
            assert await read_all(bad) == b""
        assert "closing the connection from 127.0.0.1" in caplog.text
        async with await connect(node) as conn:
            assert conn.server_versions is not None and 10000 in conn.server_versions
        node.stop()


async def test_an_unknown_api_versions_version_gets_a_v0_answer_with_error_35(
    tmp_path: Path,
) -> None:
    async with trio.open_nursery() as nursery:
        [node] = await start_nodes(nursery, tmp_path, 1)
        assert node.address is not None
        request = encode_request(
            RequestHeader(api_key=18, api_version=3, correlation_id=42), ApiVersionsRequest()
        )
        # the same request claiming version 9, which nobody serves
        request = request[:6] + struct.pack(">h", 9) + request[8:]
        async with await trio.open_tcp_stream("127.0.0.1", node.address.port) as stream:
            await stream.send_all(request)
            data = b""
            while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:4], "big"):
                data += await stream.receive_some(65536)
        header, answer = decode_response(data[4:], 18, 0)
        assert isinstance(answer, ApiVersionsResponse) and header.correlation_id == 42
        assert answer.error_code == Errors.UNSUPPORTED_VERSION
        assert (18, 0, 4) in {(k.api_key, k.min_version, k.max_version) for k in answer.api_keys}
        node.stop()


async def test_a_follower_tells_an_in_process_writer_who_leads(tmp_path: Path) -> None:
    # node 1 of two voters, the other never started: it cannot lead, and says so
    ports = free_ports(2)
    node = ControllerNode.from_config(controller_config(tmp_path, 1, ports))
    async with trio.open_nursery() as nursery:
        await nursery.start(node.run)
        with pytest.raises(AppendError) as failure:
            await node.append_and_wait_committed([b"x"])
        assert failure.value.error == Errors.NOT_LEADER_OR_FOLLOWER
        node.stop()


async def test_a_corrupt_quorum_state_file_stops_the_start_and_names_the_file(
    tmp_path: Path,
) -> None:
    config = controller_config(tmp_path, 1, free_ports(1))
    node = ControllerNode.from_config(config)
    state = node.settings.metadata_partition_dir / "quorum-state"
    state.parent.mkdir(parents=True)
    state.write_text("{garbage")
    with pytest.raises(QuorumStateError, match=re.escape(str(state))):
        await node.run()


def test_unformatted_storage_is_refused_before_anything_starts(tmp_path: Path) -> None:
    config = controller_config(tmp_path, 1, free_ports(1), format_as=None)
    with pytest.raises(NotFormattedError, match="kraft storage format"):
        ControllerNode.from_config(config)


def test_directories_of_two_clusters_are_refused(tmp_path: Path) -> None:
    config = controller_config(tmp_path, 1, free_ports(1))
    meta_dir = config.metadata_log_dir
    meta = read_meta_properties(meta_dir)
    assert meta is not None
    write_meta_properties(meta_dir, attrs.evolve(meta, cluster_id="AAAAAAAAAAAAAAAAAAAAAB"))
    with pytest.raises(StorageError, match=r"Invalid cluster\.id"):
        ControllerNode.from_config(config)


def test_a_combined_config_is_refused_by_the_controller_node_with_where_it_runs() -> None:
    config = server_config_from_properties({
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": "1@127.0.0.1:9093",
        "listeners": "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
        "controller.listener.names": "CONTROLLER",
    })
    with pytest.raises(NodeStartupError, match=r"process\.roles=broker,controller: .* broker node"):
        ControllerNode.from_config(config)


async def test_a_listener_port_in_use_is_a_startup_error_naming_it(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        node = ControllerNode.from_config(controller_config(tmp_path, 1, [port]))
        with pytest.raises(BaseException) as failure:
            async with trio.open_nursery() as nursery:
                await nursery.start(node.run)
    assert f"cannot listen on 127.0.0.1:{port}" in str(_innermost(failure.value))


def _innermost(error: BaseException) -> BaseException:
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error
