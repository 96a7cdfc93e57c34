"""meta.properties, format_storage, storage_info and the start-up storage check."""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from quorum.config import ServerConfig, server_config_from_properties
from quorum.storage import (
    PYKRAFT_METADATA_VERSION,
    DirectoryKind,
    MetaProperties,
    NotFormattedError,
    StorageError,
    check_storage_for_start,
    format_storage,
    read_meta_properties,
    storage_info,
    write_meta_properties,
)
from quorum.storage.meta_properties import is_reserved_directory_id
from quorum.wire.uuids import random_uuid, uuid_to_str

CLUSTER = "fMCL8kv1SWm87L_Md-I2hg"
OTHER_CLUSTER = "J8aAPcfLQt2bqs1JT_rMgQ"


def node_config(
    tmp_path: Path, node_id: int = 1, extra: dict[str, str] | None = None
) -> ServerConfig:
    return server_config_from_properties({
        "process.roles": "controller",
        "node.id": str(node_id),
        "controller.quorum.voters": f"{node_id}@localhost:9093",
        "listeners": "CONTROLLER://localhost:9093",
        "controller.listener.names": "CONTROLLER",
        "log.dirs": f"{tmp_path}/logs-a,{tmp_path}/logs-b",
        "metadata.log.dir": f"{tmp_path}/metadata",
        **(extra or {}),
    })


def meta_text(directory: str | Path) -> str:
    return (Path(directory) / "meta.properties").read_text()


# --- meta.properties --------------------------------------------------------------

def test_meta_properties_is_written_as_kafka_writes_it(tmp_path: Path) -> None:
    directory_id = uuid.UUID(int=12345 << 64)
    write_meta_properties(tmp_path, MetaProperties(
        cluster_id=CLUSTER, node_id=3, directory_id=directory_id
    ))
    lines = meta_text(tmp_path).splitlines()
    assert lines[0] == "#"
    assert re.fullmatch(r"#\w{3} \w{3} \d\d \d\d:\d\d:\d\d \S+ \d{4}", lines[1])
    assert lines[2:] == [
        f"cluster.id={CLUSTER}",
        f"directory.id={uuid_to_str(directory_id)}",
        "node.id=3",
        "version=1",
    ]
    assert not (tmp_path / "meta.properties.tmp").exists()


def test_meta_properties_reads_back_what_was_written(tmp_path: Path) -> None:
    meta = MetaProperties(cluster_id=CLUSTER, node_id=7, directory_id=random_uuid())
    write_meta_properties(tmp_path, meta)
    assert read_meta_properties(tmp_path) == meta


def test_a_directory_without_meta_properties_reads_as_none(tmp_path: Path) -> None:
    assert read_meta_properties(tmp_path) is None
    assert read_meta_properties(tmp_path / "absent") is None


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("cluster.id=x\nnode.id=1\n", "formatted for legacy mode"),
        ("version=2\ncluster.id=x\nnode.id=1\n", "Unknown meta.properties version number 2"),
        ("version=one\n", "Invalid meta.properties version string 'one'"),
        ("version=1\ncluster.id=x\n", "Failed to find node.id"),
        ("version=1\ncluster.id=x\nnode.id=a\n", "Unable to read node.id as a base-10 number."),
        ("version=1\nnode.id=1\n", "cluster.id was not found."),
        ("version=1\ncluster.id=x\nnode.id=1\ndirectory.id=zz\n", "Unable to read directory.id"),
    ],
)
def test_a_bad_meta_properties_names_the_file_and_the_fault(
    tmp_path: Path, content: str, reason: str
) -> None:
    (tmp_path / "meta.properties").write_text(content)
    with pytest.raises(StorageError) as caught:
        read_meta_properties(tmp_path)
    assert str(caught.value).startswith(f"Error loading {tmp_path / 'meta.properties'}: ")
    assert reason in str(caught.value)


def test_kafkas_reserved_directory_ids_are_the_first_hundred_and_negative_low_bits() -> None:
    assert is_reserved_directory_id(uuid.UUID(int=0))
    assert is_reserved_directory_id(uuid.UUID(int=99))
    assert not is_reserved_directory_id(uuid.UUID(int=100))
    assert is_reserved_directory_id(uuid.UUID(int=(1 << 64) - 1))  # low bits read as -1
    assert not is_reserved_directory_id(uuid.UUID(int=1 << 64))


# --- format -------------------------------------------------------------------------

def test_format_writes_every_directory_with_its_own_directory_id(tmp_path: Path) -> None:
    config = node_config(tmp_path)
    result = format_storage(config, CLUSTER)
    assert result.metadata_version == PYKRAFT_METADATA_VERSION
    assert [(d.path, d.kind) for d in result.formatted] == [
        (f"{tmp_path}/logs-a", DirectoryKind.DATA),
        (f"{tmp_path}/logs-b", DirectoryKind.DATA),
        (f"{tmp_path}/metadata", DirectoryKind.METADATA),
    ]
    metas = [read_meta_properties(d.path) for d in result.formatted]
    assert metas == [d.meta for d in result.formatted]
    assert {(m.cluster_id, m.node_id) for m in metas if m} == {(CLUSTER, 1)}
    assert len({m.directory_id for m in metas if m}) == 3


def test_the_metadata_dir_defaults_to_the_first_log_dir(tmp_path: Path) -> None:
    config = server_config_from_properties({
        "process.roles": "controller", "node.id": "1",
        "controller.quorum.voters": "1@localhost:9093",
        "listeners": "CONTROLLER://localhost:9093", "controller.listener.names": "CONTROLLER",
        "log.dirs": f"{tmp_path}/b,{tmp_path}/a/",
    })
    result = format_storage(config, CLUSTER)
    kinds = {d.path: d.kind for d in result.formatted}
    assert kinds == {f"{tmp_path}/a/": DirectoryKind.DATA, f"{tmp_path}/b": DirectoryKind.METADATA}


def test_format_refuses_a_malformed_cluster_id(tmp_path: Path) -> None:
    with pytest.raises(StorageError, match="Cluster ID string abc does not appear to be a valid UUID"):
        format_storage(node_config(tmp_path), "abc")
    assert not (tmp_path / "metadata").exists()


def test_format_refuses_a_controller_without_static_voters(tmp_path: Path) -> None:
    config = node_config(
        tmp_path, extra={"controller.quorum.voters": "", "controller.quorum.bootstrap.servers": "h:1"}
    )
    with pytest.raises(StorageError, match=r"controller\.quorum\.voters is not set on this"):
        format_storage(config, CLUSTER)


def test_format_refuses_already_formatted_directories(tmp_path: Path) -> None:
    config = node_config(tmp_path)
    format_storage(config, CLUSTER)
    before = meta_text(tmp_path / "metadata")
    with pytest.raises(StorageError) as caught:
        format_storage(config, CLUSTER)
    assert str(caught.value) == (
        f"Log directory {tmp_path}/logs-a is already formatted. Use --ignore-formatted to "
        "ignore this directory and format the others."
    )
    assert meta_text(tmp_path / "metadata") == before


def test_ignore_formatted_formats_only_the_others(tmp_path: Path) -> None:
    config = node_config(tmp_path)
    format_storage(config, CLUSTER)
    (tmp_path / "logs-b" / "meta.properties").unlink()
    result = format_storage(config, CLUSTER, ignore_formatted=True)
    assert [d.path for d in result.formatted] == [f"{tmp_path}/logs-b"]
    assert result.already_formatted == (f"{tmp_path}/logs-a", f"{tmp_path}/metadata")


def test_ignore_formatted_with_nothing_left_formats_nothing(tmp_path: Path) -> None:
    config = node_config(tmp_path)
    format_storage(config, CLUSTER)
    result = format_storage(config, CLUSTER, ignore_formatted=True)
    assert result.formatted == ()
    assert len(result.already_formatted) == 3


def test_format_refuses_directories_of_another_cluster_even_when_ignoring(tmp_path: Path) -> None:
    config = node_config(tmp_path)
    format_storage(config, OTHER_CLUSTER)
    with pytest.raises(StorageError) as caught:
        format_storage(config, CLUSTER, ignore_formatted=True)
    assert str(caught.value) == (
        f"Invalid cluster.id in: {tmp_path}/logs-a/meta.properties. "
        f"Expected {CLUSTER}, but read {OTHER_CLUSTER}"
    )


def test_format_refuses_directories_of_another_node(tmp_path: Path) -> None:
    format_storage(node_config(tmp_path, node_id=2), CLUSTER)
    with pytest.raises(StorageError, match="Stored node id 2 doesn't match previous node id 1"):
        format_storage(node_config(tmp_path, node_id=1), CLUSTER, ignore_formatted=True)


def test_format_skips_unreadable_directories_and_fails_when_none_is_usable(tmp_path: Path) -> None:
    config = node_config(tmp_path)
    for name in ("logs-a", "logs-b", "metadata"):
        (tmp_path / name).write_text("a file, not a directory")
    with pytest.raises(StorageError, match=r"No available log directories to format\."):
        format_storage(config, CLUSTER)
    (tmp_path / "metadata").unlink()
    result = format_storage(config, CLUSTER)
    assert result.unreadable == (f"{tmp_path}/logs-a", f"{tmp_path}/logs-b")
    assert [d.path for d in result.formatted] == [f"{tmp_path}/metadata"]


def test_format_never_hands_out_a_taken_or_reserved_directory_id(tmp_path: Path) -> None:
    fixed = uuid.UUID(int=(5 << 64) | 5)
    supply: Iterator[uuid.UUID] = iter(
        [uuid.UUID(int=3), fixed, fixed, uuid.UUID(int=(6 << 64)), uuid.UUID(int=(7 << 64))]
    )
    result = format_storage(node_config(tmp_path), CLUSTER, new_directory_id=lambda: next(supply))
    assert [d.meta.directory_id for d in result.formatted] == [
        fixed, uuid.UUID(int=6 << 64), uuid.UUID(int=7 << 64)
    ]


# --- info ---------------------------------------------------------------------------

def test_info_on_missing_directories_reports_each(tmp_path: Path) -> None:
    info = storage_info(node_config(tmp_path))
    assert info.found_directories == () and info.metadata is None
    assert info.problems == tuple(
        f"{tmp_path}/{name} does not exist" for name in ("logs-a", "logs-b", "metadata")
    )
    assert not info.ok


def test_info_on_unformatted_and_misplaced_directories(tmp_path: Path) -> None:
    (tmp_path / "logs-a").mkdir()
    (tmp_path / "logs-b").write_text("")
    info = storage_info(node_config(tmp_path))
    assert info.found_directories == (f"{tmp_path}/logs-a",)
    assert info.problems == (
        f"{tmp_path}/logs-a is not formatted.",
        f"{tmp_path}/logs-b is not a directory",
        f"{tmp_path}/metadata does not exist",
    )


def test_info_on_formatted_directories_shows_the_first_meta(tmp_path: Path) -> None:
    config = node_config(tmp_path)
    result = format_storage(config, CLUSTER)
    info = storage_info(config)
    assert info.ok
    assert info.found_directories == tuple(d.path for d in result.formatted)
    assert info.metadata == result.formatted[0].meta


def test_info_reports_mismatched_cluster_and_node_ids(tmp_path: Path) -> None:
    config = node_config(tmp_path)
    format_storage(config, CLUSTER)
    write_meta_properties(tmp_path / "logs-b", MetaProperties(
        cluster_id=OTHER_CLUSTER, node_id=1, directory_id=random_uuid()))
    write_meta_properties(tmp_path / "metadata", MetaProperties(
        cluster_id=CLUSTER, node_id=2, directory_id=random_uuid()))
    assert storage_info(config).problems == (
        "Mismatched cluster IDs between storage directories.",
        "Mismatched node IDs between storage directories.",
    )


def test_info_reports_a_broken_meta_properties(tmp_path: Path) -> None:
    config = node_config(tmp_path)
    format_storage(config, CLUSTER)
    (tmp_path / "logs-b" / "meta.properties").write_text("version=1\n")
    (problem,) = storage_info(config).problems
    assert problem.startswith(f"Error loading {tmp_path}/logs-b/meta.properties: ")


# --- the start-up check --------------------------------------------------------------

def test_start_check_returns_the_metadata_directory_identity(tmp_path: Path) -> None:
    config = node_config(tmp_path)
    result = format_storage(config, CLUSTER)
    assert check_storage_for_start(config) == result.formatted[-1].meta


def test_start_check_refuses_an_unformatted_directory(tmp_path: Path) -> None:
    config = node_config(tmp_path)
    with pytest.raises(NotFormattedError) as caught:
        check_storage_for_start(config)
    assert str(caught.value) == (
        f"No `meta.properties` found in {tmp_path}/logs-a (have you run `kraft storage "
        "format` to format the directory?)"
    )
    format_storage(config, CLUSTER)
    (tmp_path / "metadata" / "meta.properties").unlink()
    with pytest.raises(NotFormattedError, match="metadata"):
        check_storage_for_start(config)


def test_start_check_refuses_directories_of_two_clusters(tmp_path: Path) -> None:
    config = node_config(tmp_path)
    format_storage(config, CLUSTER)
    write_meta_properties(tmp_path / "metadata", MetaProperties(
        cluster_id=OTHER_CLUSTER, node_id=1, directory_id=random_uuid()))
    with pytest.raises(StorageError, match=re.escape(
        f"Invalid cluster.id in: {tmp_path}/metadata/meta.properties. "
        f"Expected {CLUSTER}, but read {OTHER_CLUSTER}"
    )):
        check_storage_for_start(config)


def test_start_check_refuses_storage_of_another_node_id(tmp_path: Path) -> None:
    format_storage(node_config(tmp_path, node_id=1), CLUSTER)
    with pytest.raises(StorageError, match="Stored node id 1 doesn't match previous node id 2"):
        check_storage_for_start(node_config(tmp_path, node_id=2))


def test_start_check_refuses_duplicate_directory_ids(tmp_path: Path) -> None:
    config = node_config(tmp_path)
    result = format_storage(config, CLUSTER)
    write_meta_properties(tmp_path / "logs-b", result.formatted[0].meta)
    with pytest.raises(StorageError, match="Duplicate directory ID"):
        check_storage_for_start(config)


def test_start_check_refuses_an_unreadable_metadata_directory(tmp_path: Path) -> None:
    config = node_config(tmp_path)
    format_storage(config, CLUSTER)
    (tmp_path / "metadata" / "meta.properties").write_text("version=1\nnode.id=1\n")
    with pytest.raises(StorageError, match="Encountered I/O error in metadata log directory"):
        check_storage_for_start(config)


def test_start_check_refuses_a_metadata_log_outside_the_metadata_directory(tmp_path: Path) -> None:
    config = node_config(tmp_path)
    format_storage(config, CLUSTER)
    (tmp_path / "logs-a" / "__cluster_metadata-0").mkdir()
    with pytest.raises(StorageError, match="Found unexpected metadata location in data directory"):
        check_storage_for_start(config)


def test_start_check_gives_a_directory_id_to_directories_without_one(tmp_path: Path) -> None:
    config = node_config(tmp_path)
    format_storage(config, CLUSTER)
    bare = MetaProperties(cluster_id=CLUSTER, node_id=1, directory_id=None)
    write_meta_properties(tmp_path / "metadata", bare)
    meta = check_storage_for_start(config)
    assert meta.directory_id is not None
    assert read_meta_properties(tmp_path / "metadata") == meta
    assert os.listdir(tmp_path / "metadata") == ["meta.properties"]
