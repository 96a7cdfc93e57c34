"""The Kafka launcher's pieces that need no JVM: configs, command lines, the Maven cache,
MainRunner's report format."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from deploy.kafka import KafkaClusterSpec, KafkaDistribution, pinned_version, resolve_kafka
from deploy.kafka.jvm import PERFORMANCE_OPTS, server_command
from deploy.kafka.layout import node_properties, plan_nodes, write_configs
from deploy.kafka.mains import parse_runner_output
from deploy.kafka.resolve import CLIENTS_POM, POM, resolve_clients
from deploy.layout import LaunchError
from quorum.config import parse_properties


def test_three_controllers_and_three_brokers_form_one_static_quorum(tmp_path: Path) -> None:
    spec = KafkaClusterSpec()
    nodes = plan_nodes(tmp_path, spec)
    assert [(n.node_id, n.roles) for n in nodes] == [
        (1, "controller"), (2, "controller"), (3, "controller"),
        (4, "broker"), (5, "broker"), (6, "broker"),
    ]
    configs = {n.node_id: node_properties(n, nodes, spec) for n in nodes}
    voters = {c["controller.quorum.voters"] for c in configs.values()}
    assert voters == {",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in nodes[:3])}
    assert configs[1]["listeners"] == f"CONTROLLER://127.0.0.1:{nodes[0].controller_port}"
    assert "advertised.listeners" not in configs[1]
    assert configs[4]["advertised.listeners"] == configs[4]["listeners"] == \
        f"PLAINTEXT://127.0.0.1:{nodes[3].broker_port}"
    assert configs[4]["offsets.topic.replication.factor"] == "3"
    assert len({n.address for n in nodes}) == 6


def test_combined_nodes_have_both_listeners_and_small_internal_topics(tmp_path: Path) -> None:
    spec = KafkaClusterSpec(controllers=1, brokers=0, combined=True)
    (node,) = plan_nodes(tmp_path, spec)
    config = node_properties(node, [node], spec)
    assert config["process.roles"] == "broker,controller"
    assert config["listeners"] == (f"PLAINTEXT://127.0.0.1:{node.broker_port},"
                                   f"CONTROLLER://127.0.0.1:{node.controller_port}")
    # one broker cannot hold Kafka's default of 3 replicas of __consumer_offsets
    assert config["offsets.topic.replication.factor"] == "1"
    assert config["transaction.state.log.min.isr"] == "1"


def test_a_spec_that_cannot_run_is_refused() -> None:
    with pytest.raises(LaunchError, match="brokers=0"):
        KafkaClusterSpec(controllers=3, brokers=3, combined=True)
    with pytest.raises(LaunchError, match="serves no client"):
        KafkaClusterSpec(controllers=3, brokers=0)


def test_a_node_runs_with_the_start_scripts_heap_and_gc(tmp_path: Path) -> None:
    distribution = KafkaDistribution(version="4.x", libs=tmp_path / "libs")
    command = server_command(distribution, tmp_path / "server.properties",
                             log_dir=tmp_path / "logs", log_config=tmp_path / "log4j2")
    assert command[1:3] == ["-Xmx1G", "-Xms1G"]
    assert "-XX:+UseG1GC" in PERFORMANCE_OPTS
    assert all(option in command for option in PERFORMANCE_OPTS)
    assert command[-4:] == ["-cp", f"{tmp_path / 'libs'}/*", "kafka.Kafka",
                            str(tmp_path / "server.properties")]


def _fake_maven(directory: Path, calls: Path) -> None:
    """An ``mvn`` that records its call and writes a kafka jar where it was told to."""
    script = directory / "mvn"
    script.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> "{calls}"\n'
        'for a in "$@"; do case "$a" in -DoutputDirectory=*) out="${a#*=}";; esac; done\n'
        'mkdir -p "$out" && : > "$out/kafka_2.13-9.9.jar"\n'
    )
    script.chmod(0o755)


def test_resolving_runs_maven_once_per_pom(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir, calls = tmp_path / "bin", tmp_path / "calls"
    bin_dir.mkdir()
    _fake_maven(bin_dir, calls)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    pom = tmp_path / "pom.xml"
    pom.write_text(POM.read_text())
    first = resolve_kafka(pom, root=tmp_path / "cache")
    again = resolve_kafka(pom, root=tmp_path / "cache")
    assert first == again
    assert first.version == pinned_version(pom)
    assert first.libs == tmp_path / "cache" / f"kafka-{first.version}" / "libs"
    assert [p.name for p in first.libs.iterdir()] == ["kafka_2.13-9.9.jar"]
    (call,) = calls.read_text().splitlines()
    assert "dependency:copy-dependencies" in call and "-DincludeScope=runtime" in call
    # a changed pom resolves again
    pom.write_text(POM.read_text() + "<!-- changed -->\n")
    resolve_kafka(pom, root=tmp_path / "cache")
    assert len(calls.read_text().splitlines()) == 2


def test_spark_s_client_resolves_into_a_cache_of_its_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir, calls = tmp_path / "bin", tmp_path / "calls"
    bin_dir.mkdir()
    _fake_maven(bin_dir, calls)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    pom = tmp_path / "pom.xml"
    pom.write_text(CLIENTS_POM.read_text())
    # a resolve that brings no kafka-clients jar is refused and leaves no libs behind
    with pytest.raises(LaunchError, match="kafka-clients"):
        resolve_clients(pom, root=tmp_path / "cache")
    home = tmp_path / "cache" / f"kafka-clients-{pinned_version(pom)}"
    assert not (home / "libs").exists()
    script = bin_dir / "mvn"
    script.write_text(script.read_text().replace("kafka_2.13-9.9.jar", "kafka-clients-9.9.jar"))
    clients = resolve_clients(pom, root=tmp_path / "cache")
    assert clients == resolve_clients(pom, root=tmp_path / "cache")
    assert clients.libs == home / "libs"
    assert [p.name for p in clients.libs.iterdir()] == ["kafka-clients-9.9.jar"]
    assert len(calls.read_text().splitlines()) == 2  # the refused resolve, then one more
    # the pinned Kafka's cache is another directory, untouched
    assert not (tmp_path / "cache" / f"kafka-{pinned_version()}").exists()


def test_the_clients_pom_pins_the_3_9_client_spark_brings() -> None:
    version = pinned_version(CLIENTS_POM)
    assert version.startswith("3.9."), version


def test_the_pom_pins_one_kafka_4_release() -> None:
    version = pinned_version()
    assert version.startswith("4."), version
    assert "SNAPSHOT" not in version


def test_main_runner_reports_are_read_in_order_and_other_lines_ignored() -> None:
    commands = [("a.Main", "x"), ("b.Main",)]
    text = (
        'noise from a tool thread\n'
        'PYKRAFT-MAIN-RUNNER {"index":0,"exit":0,"stdout":"one\\n","stderr":""}\n'
        'PYKRAFT-MAIN-RUNNER {"index":1,"exit":1,"stdout":"","stderr":"boom\\u0009"}\n'
    )
    runs = parse_runner_output(text, commands)
    assert [(r.command, r.exit_code, r.stdout, r.stderr) for r in runs] == [
        (("a.Main", "x"), 0, "one\n", ""), (("b.Main",), 1, "", "boom\t"),
    ]
    with pytest.raises(LaunchError, match="exited 1"):
        runs[1].check()
    with pytest.raises(LaunchError, match="run 1 after 0"):
        parse_runner_output(text.splitlines()[2], commands)


def test_written_configs_read_back_as_java_properties(tmp_path: Path) -> None:
    spec = KafkaClusterSpec(properties={"num.io.threads": "2"})
    nodes = plan_nodes(tmp_path, spec)
    write_configs(nodes, spec)
    read = parse_properties(nodes[3].config_path.read_text())
    assert read == node_properties(nodes[3], nodes, spec)
    assert read["num.io.threads"] == "2"
