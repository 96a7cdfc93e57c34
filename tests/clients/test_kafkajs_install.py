"""The kafkajs install step: where it goes, when it is reused, what it says without Node."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .kafkajs_install import NodeMissingError, kafkajs_modules, kafkajs_version


def _fake_install(prefix: Path, version: str) -> None:
    package = prefix / "node_modules" / "kafkajs"
    package.mkdir(parents=True)
    (package / "package.json").write_text(json.dumps({"name": "kafkajs", "version": version}))


def test_the_pin_is_one_exact_version() -> None:
    version = kafkajs_version()
    assert version.count(".") == 2 and all(part.isdigit() for part in version.split("."))


def test_an_install_in_the_cache_is_reused_without_node(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYKRAFT_NODE_CACHE", str(tmp_path))
    monkeypatch.setenv("PATH", "")  # npm would not be found: nothing may run it
    _fake_install(tmp_path / f"kafkajs-{kafkajs_version()}", kafkajs_version())
    assert kafkajs_modules() == tmp_path / f"kafkajs-{kafkajs_version()}" / "node_modules"


def test_the_cache_follows_xdg_cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYKRAFT_NODE_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("PATH", "")
    _fake_install(tmp_path / "pykraft" / f"kafkajs-{kafkajs_version()}", kafkajs_version())
    assert kafkajs_modules().parent == tmp_path / "pykraft" / f"kafkajs-{kafkajs_version()}"


def test_without_node_the_error_names_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYKRAFT_NODE_CACHE", str(tmp_path))
    monkeypatch.setenv("PATH", "")
    # another version in the cache does not count as installed
    _fake_install(tmp_path / f"kafkajs-{kafkajs_version()}", "0.0.1")
    with pytest.raises(NodeMissingError, match=r"node and npm not found.*Node\.js"):
        kafkajs_modules()


def test_a_failed_install_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYKRAFT_NODE_CACHE", str(tmp_path))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool, script in [("node", "exit 0"), ("npm", "echo offline >&2; exit 1")]:
        (bin_dir / tool).write_text(f"#!/bin/sh\n{script}\n")
        (bin_dir / tool).chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    with pytest.raises(RuntimeError, match=r"npm install of kafkajs \S+ failed(.|\n)*offline"):
        kafkajs_modules()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin"]
