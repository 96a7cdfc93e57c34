"""kafkajs, installed on first use into a cache outside the repo.

The version is pinned once, in ``kafkajs/package.json`` beside this module (an exact
version; kafkajs has no dependencies of its own, so the pin is the whole tree). The
install goes to ``$PYKRAFT_NODE_CACHE`` or ``${XDG_CACHE_HOME:-~/.cache}/pykraft/``, in a
directory named for the version: it is made in a scratch directory beside it and renamed
into place, so an interrupted install leaves nothing that looks finished, and a finished
one is reused by every later run.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Final

from deploy.cache_dirs import user_cache_root

__all__ = ["BRIDGE_DIR", "NodeMissingError", "kafkajs_modules", "kafkajs_version"]

BRIDGE_DIR: Final = Path(__file__).parent / "kafkajs"
_INSTALL_S: Final = 300.0


class NodeMissingError(RuntimeError):
    """node or npm is not on PATH."""


def kafkajs_version() -> str:
    """The exact kafkajs version ``kafkajs/package.json`` pins."""
    manifest = json.loads((BRIDGE_DIR / "package.json").read_text())
    version: str = manifest["dependencies"]["kafkajs"]
    assert version[:1].isdigit(), f"kafkajs must be pinned to an exact version, not {version!r}"
    return version


def _installed(prefix: Path, version: str) -> bool:
    manifest = prefix / "node_modules" / "kafkajs" / "package.json"
    try:
        return bool(json.loads(manifest.read_text()).get("version") == version)
    except (OSError, ValueError):
        return False


def _require_tools() -> None:
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        raise NodeMissingError(
            f"{' and '.join(missing)} not found on PATH: the kafkajs tests need Node.js 18 or "
            "later with npm (e.g. `apt-get install nodejs npm`)"
        )


def kafkajs_modules() -> Path:
    """The ``node_modules`` directory holding the pinned kafkajs, installed if missing."""
    version = kafkajs_version()
    prefix = user_cache_root("PYKRAFT_NODE_CACHE") / f"kafkajs-{version}"
    if not _installed(prefix, version):
        _require_tools()
        _install(prefix, version)
    return prefix / "node_modules"


def _install(prefix: Path, version: str) -> None:
    prefix.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{prefix.name}-", dir=prefix.parent))
    scratch.chmod(0o755)  # mkdtemp's 0700 would hide the cache from other users
    try:
        shutil.copy(BRIDGE_DIR / "package.json", scratch / "package.json")
        done = subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(scratch)],
            capture_output=True, text=True, timeout=_INSTALL_S, check=False,
        )
        if done.returncode != 0 or not _installed(scratch, version):
            raise RuntimeError(
                f"npm install of kafkajs {version} failed (exit {done.returncode}):\n"
                f"{done.stdout[-2000:]}{done.stderr[-2000:]}"
            )
        if prefix.exists():
            shutil.rmtree(prefix)  # a stale install of another content under this name
        try:
            scratch.rename(prefix)
        except OSError:
            # another run finished the same install first: use its copy
            if not _installed(prefix, version):
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
