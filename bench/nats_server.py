"""The nats-server program the NATS peer runs: found on PATH, else Debian's package.

``find_nats_server()`` returns the program and its version
(``nats-server --version``). When it is neither on PATH nor where Debian
puts it (/usr/sbin, off a non-root user's PATH) and this process is
root, it installs Debian's ``nats-server`` package (``apt-get update`` once,
then ``apt-get install -y nats-server``); otherwise it raises
``NatsServerMissing`` with the command that installs it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Final

import attrs

__all__ = ["NatsServerMissing", "NatsServerProgram", "find_nats_server"]

PROGRAM: Final = "nats-server"
DEBIAN_PACKAGE: Final = "nats-server"
# where Debian's package puts it: not on a non-root user's PATH
DEBIAN_PATH: Final = "/usr/sbin/nats-server"
_INSTALL_HINT: Final = f"install it with: sudo apt-get install -y {DEBIAN_PACKAGE} (Debian)"
# apt-get update and install over the network: generous, but bounded
_APT_TIMEOUT_S: Final = 600.0
_VERSION_TIMEOUT_S: Final = 10.0


class NatsServerMissing(RuntimeError):
    """nats-server is not on PATH and could not be installed here."""


@attrs.frozen
class NatsServerProgram:
    path: str
    # "nats-server: v2.9.10" as the program prints it, the "v" dropped
    version: str


def find_nats_server(*, install: bool = True) -> NatsServerProgram:
    """nats-server from PATH, installing Debian's package first if it is missing, ``install``
    is true and this process is root."""
    path = _on_path()
    if path is None and install:
        _maybe_install()
        path = _on_path()
    if path is None:
        raise NatsServerMissing(f"{PROGRAM} is not on PATH; {_INSTALL_HINT}")
    return NatsServerProgram(path=path, version=server_version(path))


def _on_path() -> str | None:
    return shutil.which(PROGRAM) or shutil.which(DEBIAN_PATH)


def server_version(path: str) -> str:
    done = subprocess.run([path, "--version"], capture_output=True, text=True, check=True,
                          timeout=_VERSION_TIMEOUT_S)
    # "nats-server: v2.9.10"
    return done.stdout.strip().rsplit(" ", 1)[-1].removeprefix("v")


def _maybe_install() -> None:
    if os.geteuid() != 0:
        raise NatsServerMissing(f"{PROGRAM} is not on PATH and this process is not root, so "
                                f"it cannot install it; {_INSTALL_HINT}")
    if shutil.which("apt-get") is None:
        raise NatsServerMissing(f"{PROGRAM} is not on PATH and there is no apt-get here to "
                                f"install Debian's {DEBIAN_PACKAGE}; install nats-server "
                                f"2.9 or later and put it on PATH")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update"], ["apt-get", "install", "-y", DEBIAN_PACKAGE]):
        done = subprocess.run(command, capture_output=True, text=True, env=env,
                              timeout=_APT_TIMEOUT_S, check=False)
        if done.returncode != 0:
            raise NatsServerMissing(f"{' '.join(command)} failed (exit {done.returncode}):\n"
                                    f"{done.stderr.strip()[-2000:]}\n{_INSTALL_HINT}")
