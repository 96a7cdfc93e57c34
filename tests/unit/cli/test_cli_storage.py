"""``kraft storage``: kafka-storage's commands, output and exit codes, via CliRunner."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cli.main import kraft, main
from quorum.storage import PYKRAFT_METADATA_VERSION, read_meta_properties
from quorum.wire.uuids import uuid_from_str, uuid_to_str

ROOT = Path(__file__).resolve().parents[3]
CLUSTER = "fMCL8kv1SWm87L_Md-I2hg"
MV = str(PYKRAFT_METADATA_VERSION)


@pytest.fixture
def config_path(tmp_path: Path) -> Path:
    path = tmp_path / "controller.properties"
    path.write_text(
        "process.roles=controller\n"
        "node.id=1\n"
        "controller.quorum.voters=1@localhost:9093\n"
        "listeners=CONTROLLER://localhost:9093\n"
        "controller.listener.names=CONTROLLER\n"
        f"log.dirs={tmp_path}/logs\n"
        f"metadata.log.dir={tmp_path}/metadata\n"
    )
    return path


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(kraft, [str(a) for a in args], catch_exceptions=False)


def test_the_console_script_is_cli_main_main() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["project"]["scripts"]["kraft"] == "cli.main:main"
    assert callable(main)


def test_help_lists_only_commands_that_work() -> None:
    result = run("storage", "--help")
    assert result.exit_code == 0
    commands = result.stdout.split("Commands:")[1].split()
    assert [c for c in commands if c in ("format", "info", "random-uuid")] == [
        "format", "info", "random-uuid"
    ]


def test_random_uuid_prints_one_fresh_kafka_uuid() -> None:
    first, second = run("storage", "random-uuid"), run("storage", "random-uuid")
    assert first.exit_code == 0 and first.stderr == ""
    text = first.stdout.strip()
    assert first.stdout == text + "\n"
    assert uuid_to_str(uuid_from_str(text)) == text
    assert second.stdout != first.stdout


def test_format_prints_one_line_per_directory(config_path: Path, tmp_path: Path) -> None:
    result = run("storage", "format", "-c", config_path, "-t", CLUSTER)
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout.splitlines() == [
        f"Formatting data directory {tmp_path}/logs with metadata.version {MV}.",
        f"Formatting metadata directory {tmp_path}/metadata with metadata.version {MV}.",
    ]
    meta = read_meta_properties(tmp_path / "metadata")
    assert meta is not None and (meta.cluster_id, meta.node_id) == (CLUSTER, 1)


def test_formatting_twice_fails_with_kafkas_message(config_path: Path, tmp_path: Path) -> None:
    run("storage", "format", "--config", config_path, "--cluster-id", CLUSTER)
    result = run("storage", "format", "--config", config_path, "--cluster-id", CLUSTER)
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr == (
        f"Log directory {tmp_path}/logs is already formatted. Use --ignore-formatted to ignore "
        "this directory and format the others.\n"
    )


def test_ignore_formatted_reports_when_all_are_formatted(config_path: Path) -> None:
    run("storage", "format", "-c", config_path, "-t", CLUSTER)
    result = run("storage", "format", "-c", config_path, "-t", CLUSTER, "--ignore-formatted")
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == "All of the log directories are already formatted.\n"


def test_ignore_formatted_formats_the_rest(config_path: Path, tmp_path: Path) -> None:
    run("storage", "format", "-c", config_path, "-t", CLUSTER)
    (tmp_path / "logs" / "meta.properties").unlink()
    result = run("storage", "format", "-c", config_path, "-t", CLUSTER, "-g")
    assert result.exit_code == 0
    assert result.stdout == (
        f"Formatting data directory {tmp_path}/logs with metadata.version {MV}.\n"
    )


def test_format_refuses_a_bad_cluster_id(config_path: Path, tmp_path: Path) -> None:
    result = run("storage", "format", "-c", config_path, "-t", "not-a-uuid")
    assert result.exit_code == 1
    assert result.stderr.startswith(
        "Cluster ID string not-a-uuid does not appear to be a valid UUID"
    )
    assert not (tmp_path / "metadata").exists()


def test_a_bad_config_fails_naming_the_file_line_and_key(config_path: Path) -> None:
    config_path.write_text(config_path.read_text() + "num.partitions=zero\n")
    result = run("storage", "format", "-c", config_path, "-t", CLUSTER)
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr == (
        f"{config_path}:8: Invalid value zero for configuration num.partitions: "
        "Not a number of type INT\n"
    )


def test_a_config_with_a_node_outside_the_voters_is_refused(config_path: Path) -> None:
    config_path.write_text(config_path.read_text().replace("node.id=1", "node.id=2"))
    result = run("storage", "info", "-c", config_path)
    assert result.exit_code == 1
    assert "the node id 2 must be included in the set of voters" in result.stderr


def test_a_missing_config_file_is_an_error(tmp_path: Path) -> None:
    result = run("storage", "info", "-c", tmp_path / "nope.properties")
    assert result.exit_code == 1
    assert result.stderr.startswith(f"{tmp_path}/nope.properties: cannot read")


def test_format_without_a_cluster_id_is_a_usage_error(config_path: Path) -> None:
    result = run("storage", "format", "-c", config_path)
    assert result.exit_code == 2
    assert "Missing option '-t' / '--cluster-id'" in result.stderr


def test_info_on_unformatted_storage_lists_the_problems(config_path: Path, tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    result = run("storage", "info", "-c", config_path)
    assert result.exit_code == 1
    assert result.stdout == (
        "Found log directory:\n"
        f"  {tmp_path}/logs\n"
        "\n"
        "Found problems:\n"
        f"  {tmp_path}/logs is not formatted.\n"
        f"  {tmp_path}/metadata does not exist\n"
        "\n"
    )


def test_info_on_formatted_storage_shows_the_metadata(config_path: Path, tmp_path: Path) -> None:
    run("storage", "format", "-c", config_path, "-t", CLUSTER)
    meta = read_meta_properties(tmp_path / "logs")
    assert meta is not None and meta.directory_id is not None
    result = run("storage", "info", "-c", config_path)
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == (
        "Found log directories:\n"
        f"  {tmp_path}/logs\n"
        f"  {tmp_path}/metadata\n"
        "\n"
        f"Found metadata: {{cluster.id={CLUSTER}, directory.id={uuid_to_str(meta.directory_id)}, "
        "node.id=1, version=1}\n"
        "\n"
    )


def test_info_with_one_problem_uses_the_singular(config_path: Path, tmp_path: Path) -> None:
    run("storage", "format", "-c", config_path, "-t", CLUSTER)
    (tmp_path / "logs" / "meta.properties").unlink()
    result = run("storage", "info", "-c", config_path)
    assert result.exit_code == 1
    assert result.stdout.endswith(f"Found problem:\n  {tmp_path}/logs is not formatted.\n\n")


def test_the_sample_dev_config_formats_relative_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    config = ROOT / "deploy" / "config" / "dev-controller.properties"
    result = run("storage", "format", "-c", config, "-t", CLUSTER)
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / "data" / "dev-controller" / "metadata" / "meta.properties").is_file()
    assert run("storage", "info", "-c", config).exit_code == 0
