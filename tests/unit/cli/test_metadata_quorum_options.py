"""``kraft metadata-quorum`` option errors: Kafka's texts on stderr, exit status 1."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cli.main import kraft
from deploy.layout import free_ports

UNUSED = "127.0.0.1:1"


def run(*args: str) -> Result:
    return CliRunner().invoke(kraft, ["metadata-quorum", *args], catch_exceptions=False)


def assert_fails_with(result: Result, message: str) -> None:
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == message + "\n"


def test_describe_is_listed_and_needs_a_connection_option() -> None:
    assert "describe" in run("--help").stdout
    assert_fails_with(
        run("describe", "--status"),
        "kraft metadata-quorum: error: one of the arguments --bootstrap-server "
        "--bootstrap-controller is required",
    )


def test_both_connection_options_are_refused() -> None:
    assert_fails_with(
        run("--bootstrap-server", UNUSED, "--bootstrap-controller", UNUSED, "describe", "--status"),
        "kraft metadata-quorum: error: argument --bootstrap-controller: not allowed with "
        "argument --bootstrap-server",
    )


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--status", "--replication"],
         "Only one of --status or --replication should be specified with describe sub-command"),
        ([], "One of --status or --replication must be specified with describe sub-command"),
        (["--human-readable"],
         "One of --status or --replication must be specified with describe sub-command"),
        (["--status", "--human-readable"],
         "The option --human-readable is only supported along with --replication"),
    ],
)
def test_describe_flag_combinations_get_kafkas_messages(flags: list[str], message: str) -> None:
    assert_fails_with(run("--bootstrap-controller", UNUSED, "describe", *flags), message)


def test_a_bootstrap_entry_without_a_port_is_an_invalid_url() -> None:
    assert_fails_with(
        run("--bootstrap-controller", "localhost:9093,nohost", "describe", "--status"),
        "Invalid url in bootstrap.controllers: nohost",
    )
    assert_fails_with(
        run("--bootstrap-server", ",", "describe", "--status"),
        "No resolvable bootstrap urls given in bootstrap.servers",
    )


def test_a_missing_command_config_file_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "admin.properties"
    assert_fails_with(
        run("--bootstrap-controller", UNUSED, "--command-config", str(missing), "describe",
            "--status"),
        f"Properties file {missing} does not exists!",
    )


def test_a_command_config_value_that_is_not_a_number_is_named(tmp_path: Path) -> None:
    config = tmp_path / "admin.properties"
    config.write_text("default.api.timeout.ms=soon\n")
    assert_fails_with(
        run("--bootstrap-controller", UNUSED, "--command-config", str(config), "describe",
            "--status"),
        "Invalid value soon for configuration default.api.timeout.ms: Not a number of type INT",
    )


def test_no_reachable_controller_times_out_after_default_api_timeout_ms(tmp_path: Path) -> None:
    config = tmp_path / "admin.properties"
    config.write_text("default.api.timeout.ms=300\nretry.backoff.ms=20\n")
    (port,) = free_ports("127.0.0.1", 1)  # nothing listens there once the probe closed
    result = run("--bootstrap-controller", f"127.0.0.1:{port}", "--command-config", str(config),
                 "describe", "--replication")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith(
        "TimeoutException: Timed out waiting for a node assignment. Call: describeMetadataQuorum"
    )
    assert f"127.0.0.1:{port}: cannot connect" in result.stderr
