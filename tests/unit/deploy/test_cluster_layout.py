"""The launcher's files: addresses, per-node configs (test profile, proxies) and formatting."""

from __future__ import annotations

from pathlib import Path

from deploy.layout import ClusterSpec, format_all, link_proxies, plan_layout, write_configs
from quorum.config import TEST_PROFILE_OVERRIDES, load_server_config
from quorum.storage import read_meta_properties


def test_nodes_get_distinct_free_ports_and_their_own_directories(tmp_path: Path) -> None:
    nodes = plan_layout(tmp_path, ClusterSpec(controllers=3))
    assert [n.node_id for n in nodes] == [1, 2, 3]
    assert len({n.port for n in nodes}) == 3
    assert [n.directory for n in nodes] == [tmp_path / f"controller-{i}" for i in (1, 2, 3)]


def test_a_base_port_and_per_node_hosts_give_fixed_addresses(tmp_path: Path) -> None:
    nodes = plan_layout(tmp_path, ClusterSpec(controllers=2, base_port=19091,
                                              per_node_hosts=True))
    assert [n.address for n in nodes] == [("127.0.0.1", 19091), ("127.0.0.2", 19092)]


def test_configs_load_with_the_test_profile_and_extra_properties(tmp_path: Path) -> None:
    spec = ClusterSpec(controllers=3, properties={"controller.quorum.request.timeout.ms": "777"})
    nodes = plan_layout(tmp_path, spec)
    write_configs(nodes, spec, {})
    config = load_server_config(nodes[1].config_path)
    assert config.node_id == 2
    assert [(v.node_id, v.port) for v in config.quorum_voters] == [(n.node_id, n.port)
                                                                    for n in nodes]
    fetch_timeout = TEST_PROFILE_OVERRIDES["controller.quorum.fetch.timeout.ms"]
    assert config.quorum_fetch_timeout_ms == int(fetch_timeout)
    assert config.quorum_request_timeout_ms == 777


def test_with_metrics_every_node_serves_them_on_a_port_of_its_own(tmp_path: Path) -> None:
    spec = ClusterSpec(controllers=2, brokers=1, metrics=True)
    nodes = plan_layout(tmp_path, spec)
    ports = [n.metrics_port for n in nodes]
    assert None not in ports and len({*ports, *(n.port for n in nodes)}) == 6
    write_configs(nodes, spec, {})
    listener = load_server_config(nodes[2].config_path).metrics_http_listener
    assert listener is not None and (listener.host, listener.port) == ("127.0.0.1", ports[2])
    fixed = plan_layout(tmp_path, ClusterSpec(controllers=2, base_port=19091, metrics=True))
    assert [n.metrics_port for n in fixed] == [19191, 19192]
    assert all(n.metrics_port is None for n in plan_layout(tmp_path, ClusterSpec()))


def test_with_link_proxies_each_node_reaches_the_others_through_its_own_links(
    tmp_path: Path,
) -> None:
    spec = ClusterSpec(controllers=3, link_proxies=True)
    nodes = plan_layout(tmp_path, spec)
    proxies = link_proxies(nodes)
    try:
        assert sorted(proxies) == [(1, 2), (1, 3), (2, 1), (2, 3), (3, 1), (3, 2)]
        write_configs(nodes, spec, proxies)
        voters = {v.node_id: v.port for v in load_server_config(nodes[0].config_path).quorum_voters}
        assert voters == {1: nodes[0].port, 2: proxies[(1, 2)].port, 3: proxies[(1, 3)].port}
        assert proxies[(1, 2)].target == nodes[1].address
    finally:
        for proxy in proxies.values():
            proxy.close()


def test_formatting_gives_every_node_one_cluster_id_and_keeps_it_on_the_next_run(
    tmp_path: Path,
) -> None:
    spec = ClusterSpec(controllers=3)
    nodes = plan_layout(tmp_path, spec)
    write_configs(nodes, spec, {})
    cluster_id = format_all(nodes)
    metas = [read_meta_properties(n.metadata_dir) for n in nodes]
    assert [(m.cluster_id, m.node_id) for m in metas if m] == [(cluster_id, i) for i in (1, 2, 3)]
    assert format_all(nodes) == cluster_id
