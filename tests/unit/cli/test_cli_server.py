"""``kraft server-start``: refusals are one line on stderr and exit status 1."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner, Result

from cli.main import kraft
from quorum.config import load_server_config
from quorum.storage import format_storage


def properties(tmp_path: Path) -> Path:
    path = tmp_path / "controller.properties"
    path.write_text(
        "process.roles=controller\n"
        "node.id=1\n"
        "controller.quorum.voters=1@127.0.0.1:19999\n"
        "listeners=CONTROLLER://127.0.0.1:0\n"
        "controller.listener.names=CONTROLLER\n"
        f"log.dirs={tmp_path}/logs\n"
        f"metadata.log.dir={tmp_path}/metadata\n"
    )
    return path


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(kraft, [str(a) for a in args], catch_exceptions=False)


def test_server_start_refuses_unformatted_storage(tmp_path: Path) -> None:
    result = run("server-start", properties(tmp_path))
    assert result.exit_code == 1
    assert "No `meta.properties` found" in result.stderr
    assert "kraft storage format" in result.stderr
    assert result.stdout == ""


def test_server_start_refuses_a_bad_override(tmp_path: Path) -> None:
    result = run("server-start", properties(tmp_path), "--override", "no-equals-sign")
    assert result.exit_code == 1
    assert "--override expects KEY=VALUE" in result.stderr


def test_server_start_names_an_unknown_key_given_as_override(tmp_path: Path) -> None:
    result = run("server-start", properties(tmp_path), "--override", "no.such.key=1")
    assert result.exit_code == 1
    assert "no.such.key" in result.stderr


def test_server_start_names_a_corrupt_quorum_state_file(tmp_path: Path) -> None:
    path = properties(tmp_path)
    format_storage(load_server_config(path), "MkU3OEVBNTcwNTJENDM2Qg")
    state = tmp_path / "metadata" / "__cluster_metadata-0" / "quorum-state"
    state.parent.mkdir()
    state.write_text("not json")
    result = run("server-start", path)
    assert result.exit_code == 1
    assert str(state) in result.stderr and "corrupt" in result.stderr
    assert "ready" not in result.stdout
