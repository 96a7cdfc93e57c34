"""The package arrows of ARCHITECTURE.md section 2, checked on the source.

cli -> deploy -> broker -> quorum; pipeline and bench -> broker -> quorum.
quorum never imports broker; nothing imports cli; the Raft core imports
nothing that does I/O or reads the clock.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# package -> top-level packages of ours it must not import
FORBIDDEN = {
    "quorum": {"broker", "cli", "deploy", "pipeline", "bench"},
    "broker": {"cli", "deploy", "pipeline", "bench"},
    "deploy": {"cli", "pipeline", "bench"},
    "pipeline": {"cli", "deploy"},
    "bench": {"cli"},
}
RAFT_CORE_FORBIDDEN = {
    "trio", "socket", "os", "time", "asyncio", "subprocess", "threading",
    "select", "selectors", "pathlib", "shutil", "tempfile", "io",
}


def imported_top_levels(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def python_files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_only_point_down_the_layers(package: str) -> None:
    offenders = []
    for path in python_files(package):
        bad = imported_top_levels(path) & FORBIDDEN[package]
        if bad:
            offenders.append(f"{path.relative_to(ROOT)} imports {sorted(bad)}")
    assert offenders == []


def test_the_raft_core_imports_nothing_that_does_io() -> None:
    files = python_files("quorum/raft")
    assert files, "quorum/raft has no modules"
    offenders = []
    for path in files:
        bad = imported_top_levels(path) & RAFT_CORE_FORBIDDEN
        if bad:
            offenders.append(f"{path.relative_to(ROOT)} imports {sorted(bad)}")
    assert offenders == []


def test_the_layering_check_sees_a_forbidden_import(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("import broker.x\nfrom cli import main\nimport trio\n")
    assert imported_top_levels(sample) == {"broker", "cli", "trio"}
